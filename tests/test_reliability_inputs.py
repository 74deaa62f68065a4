"""Issue 21, pure Python: values that are no real numbers are refused naming the argument;
no_grad is per thread; repeated derivatives stay polynomial in size and absurd orders are
refused; the cube root is correctly rounded (against mpmath); the cosmetics list's messages."""

from __future__ import annotations

import contextlib
import io
import math
import subprocess
import sys
import threading
import time

import mpmath
import numpy as np
import pytest

import symgraph as sg
import symgraph.dynamic as torch
import symgraph.static as tf
from symgraph.ad.differentiate import MAX_ORDER
from symgraph.cli.main import main
from symgraph.ir.cuberoot import cbrt
from symgraph.ir.traversal import topological_order

x, y = sg.symbols("x y")


@pytest.fixture(scope="module")
def fn():
    return sg.compile(x * y + sg.sin(x), [x, y], backend="python")


# -- item 7: None, complex, text and masked values --------------------------------------------

BAD_VALUES = [
    pytest.param(None, "None", id="None"),
    pytest.param(1.0 + 2.0j, "complex", id="complex"),
    pytest.param(np.array([1.0 + 1.0j, 2.0]), "complex", id="complex-array"),
    pytest.param("2.5", "text", id="numeric-text"),
    pytest.param(np.array(["1", "2"]), "text", id="text-array"),
    pytest.param([None, 2.0], "None", id="None-in-list"),
    pytest.param(np.ma.masked_array([1.0, 2.0], mask=[0, 1]), "masked", id="masked"),
]


@pytest.mark.parametrize("bad, word", BAD_VALUES)
def test_a_value_that_is_no_real_number_is_refused_naming_the_variable(fn, bad, word):
    for call in (fn, fn.value_and_grad, fn.grad, fn.jacobian):
        with pytest.raises(TypeError, match=f"'x'.*{word}|{word}.*'x'|'x'.*must be real"):
            call(bad, 1.0)
        with pytest.raises(TypeError, match="'y'"):
            call(1.0, bad)
        with pytest.raises(TypeError, match="'x'"):
            call(x=bad, y=1.0)


def test_value_and_grad_of_none_raises_type_error_naming_the_argument(fn):
    with pytest.raises(TypeError, match=r"'x' \(argument 0\).*None"):
        fn.value_and_grad(None, 1.0)


@pytest.mark.parametrize("bad", [np.array([[1.0, 2.0j]]), np.array([[None, 1.0]]),
                                 np.array([["1", "2"]]), [[1.0, None], [2.0, 3.0]]])
def test_a_batch_with_complex_or_none_entries_is_refused(fn, bad):
    with pytest.raises(TypeError, match="the point"):
        fn(bad)


def test_real_inputs_of_every_kind_still_work(fn):
    want = 2.0 + math.sin(1.0)
    for values in [(1.0, 2.0), (1, 2), (np.float32(1.0), 2), (np.int64(1), 2.0),
                   (np.array([1.0, 2.0], np.float32),), ([1, 2],), (True, 2.0),
                   (np.array([1.0, 2.0], dtype=object),)]:
        assert fn(*values) == pytest.approx(want)


def test_feed_dict_variable_tensor_and_assign_refuse_none_and_complex():
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(shape=(3,), name="p")
        v = tf.Variable([1.0, 2.0, 3.0], name="v")
        loss = tf.reduce_sum(p * v)
        with pytest.raises(TypeError, match="Variable"):
            tf.Variable(None)
        with tf.Session(backend="python") as session:
            with pytest.raises(TypeError, match=r"feed_dict\['p'\].*None"):
                session.run(loss, feed_dict={p: [None, 2, 3]})
            with pytest.raises(TypeError, match="complex"):
                session.run(loss, feed_dict={p: np.array([1j, 2, 3])})
            with pytest.raises(TypeError, match="'v'"):
                session.assign(v, [None, 1.0, 2.0])
            assert session.run(loss, feed_dict={p: [1, 1, 1]}) == 6.0
    with pytest.raises(TypeError, match="None"):
        torch.tensor([None, 1.0])
    with pytest.raises(TypeError, match="complex"):
        torch.tensor(1.0 + 1.0j)
    with pytest.raises(TypeError, match="text"):
        torch.tensor(["1.0"])


# -- item 13: no_grad is per thread -------------------------------------------------------------

def test_no_grad_in_one_thread_does_not_stop_recording_in_another():
    inside, done = threading.Event(), threading.Event()

    def hold_no_grad():
        with torch.no_grad():
            inside.set()
            done.wait(10)

    holder = threading.Thread(target=hold_no_grad)
    holder.start()
    try:
        assert inside.wait(10)
        w = torch.tensor([3.0], requires_grad=True)
        (w * w).sum().backward()  # recorded although the other thread is inside no_grad
        assert w.grad is not None and float(w.grad[0]) == 6.0
    finally:
        done.set()
        holder.join()
    with torch.no_grad():  # and in this thread, no_grad still stops recording
        w = torch.tensor([3.0], requires_grad=True)
        assert not (w * w).requires_grad


# -- item 15: repeated derivatives ------------------------------------------------------------

def test_the_fortieth_derivative_of_exp_xy_sin_x_is_small_and_fast():
    start = time.perf_counter()
    d40 = sg.diff("exp(x*y)*sin(x)", "x", 40)
    seconds = time.perf_counter() - start
    nodes = len(topological_order([d40]))
    assert nodes < 5000 and seconds < 10, (nodes, seconds)
    # against the closed form: d^n/dx^n e^{xy} sin x = e^{xy} Im((y + i)^n e^{ix})
    for xv, yv in [(0.3, 0.7), (-1.1, 0.2)]:
        want = math.exp(xv * yv) * ((yv + 1j) ** 40 * complex(math.cos(xv), math.sin(xv))).imag
        got = float(sg.evaluate(d40, {x: xv, y: yv}))
        assert got == pytest.approx(want, rel=1e-9)


def test_repeated_derivatives_match_repeated_gradients():
    f = sg.parse("tanh(x*y)*cos(x) + x**3/(1 + y*y)")
    slow = f
    for _ in range(4):
        slow = sg.grad(slow, [x])[0]
    fast = sg.diff(f, x, 4)
    for xv, yv in [(0.3, 0.7), (-1.1, 0.2), (2.0, -1.5)]:
        env = {x: xv, y: yv}
        assert float(sg.evaluate(fast, env)) == pytest.approx(float(sg.evaluate(slow, env)),
                                                              rel=1e-10, abs=1e-12)


def test_an_absurd_derivative_order_is_refused_with_the_limit():
    with pytest.raises(ValueError, match=str(MAX_ORDER)):
        sg.diff("x**2", "x", 99_999_999)
    result = _cli("diff", "exp(x*y)*sin(x)", "--order", "99999999")
    assert result.returncode == 2 and f"at most {MAX_ORDER}".encode() in result.stderr


# -- item 3, the Python side: cbrt ------------------------------------------------------------

def test_cbrt_is_correctly_rounded_against_mpmath():
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.uniform(-10, 10, 1500),
                             np.exp(rng.uniform(-744, 709, 1500)) * rng.choice([-1, 1], 1500),
                             [5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 2.0**-600,
                              np.nextafter(2.0**-600, 0.0), 2.0**900, np.nextafter(2.0**900, 4)]])
    mpmath.mp.prec = 200
    wrong = [v for v in map(float, values)
             if cbrt(v) != math.copysign(float(mpmath.cbrt(abs(v))), v)]
    assert not wrong, wrong[:5]
    assert [cbrt(float(n) ** 3) for n in range(1, 2000)] == [float(n) for n in range(1, 2000)]
    for special in (0.0, -0.0, math.inf, -math.inf):
        assert math.copysign(1, cbrt(special)) == math.copysign(1, special)
        assert cbrt(special) == special
    assert math.isnan(cbrt(math.nan))


def test_python_backend_cbrt_at_27_is_3_and_floor_of_cbrt_3375_is_15():
    f = sg.compile("cbrt(x)", backend="python")
    assert f(27.0) == 3.0 and f(np.array([[27.0], [-8.0]])).tolist() == [3.0, -2.0]
    assert sg.compile("floor(cbrt(x))", backend="python")(3375.0) == 15.0
    assert float(sg.evaluate(sg.parse("cbrt(27)"), {})) == 3.0  # constant folding too


# -- the cosmetics list: clear messages -------------------------------------------------------

def _cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """The command line, in this process (a subprocess costs ~1 s of imports)."""
    out, err, old_stdin = io.StringIO(), io.StringIO(), sys.stdin
    if stdin is not None:  # as Python reads a pipe in a UTF-8 locale
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8",
                                     errors="surrogateescape")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        sys.stdin = old_stdin
    return subprocess.CompletedProcess(args, code, out.getvalue().encode(),
                                       err.getvalue().encode("utf-8", "backslashreplace"))


def test_compile_of_an_empty_list_says_it_needs_an_expression():
    for empty in ([], ()):
        with pytest.raises(ValueError, match="at least one expression"):
            sg.compile(empty, backend="python")


def test_a_compiled_function_pickles_by_its_text_and_arguments():
    import pickle

    f = sg.compile(x * y + sg.cbrt(x), [y, x], wrt=[x], backend="python")
    g = pickle.loads(pickle.dumps(f))
    assert g.args == f.args and g.wrt == f.wrt and g.backend == "python"
    assert g.value_and_grad(2.0, 8.0)[0] == f.value_and_grad(2.0, 8.0)[0] == 18.0
    h = pickle.loads(pickle.dumps(sg.compile([x * y, x - y], backend="python")))
    assert h(1.0, 2.0).tolist() == [2.0, -1.0]


def test_symbols_of_one_name_is_the_symbol_as_in_sympy():
    assert sg.symbols("x") is x
    assert sg.symbols("x,") == (x,) and sg.symbols("x y") == (x, y)


def test_python_backend_refuses_a_strategy_it_does_not_have():
    with pytest.raises(ValueError, match="strategy"):
        sg.compile("x", backend="python", strategy="bogus")
    with pytest.raises(ValueError, match="strategy"):
        sg.compile("x", backend="python", strategy="tape")


def test_dynamic_matmul_of_mismatched_shapes_says_so_without_numpys_gufunc_text():
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with pytest.raises(ValueError, match=r"matmul shapes \(2, 2\) and \(3,\) do not match") as e:
        a @ torch.tensor([1.0, 2.0, 3.0])
    assert "gufunc" not in str(e.value)


def test_cli_at_refuses_an_overflowing_number_and_takes_signed_constants():
    result = _cli("grad", "x**2", "--at", "x=1e999", "--backend", "python")
    assert result.returncode == 2 and b"beyond float64" in result.stderr
    result = _cli("grad", "x**2", "--at", "x=-pi", "--backend", "python")
    assert result.returncode == 0 and b"f = 9.8696044010893" in result.stdout
    assert _cli("grad", "x", "--at", "x=-inf", "--backend", "python").returncode == 0


def test_cli_reads_a_file_with_a_byte_order_mark_and_refuses_binary_stdin(tmp_path):
    source = tmp_path / "bom.txt"
    source.write_bytes(b"\xef\xbb\xbfx**2\n")
    result = _cli("diff", "-f", str(source))
    assert result.returncode == 0 and result.stdout.strip() == b"2*x"
    result = _cli("diff", "-", stdin=bytes(range(256)) * 2)
    assert result.returncode == 2 and b"not text" in result.stderr
    assert b"got" not in result.stderr


def test_cli_write_errors_name_the_output_not_a_temporary_file(tmp_path):
    result = _cli("codegen", "x**2", "--backend", "python", "-o", str(tmp_path))
    assert result.returncode == 1 and str(tmp_path).encode() in result.stderr
    assert b".tmp-" not in result.stderr


def test_like_terms_summing_to_zero_keep_two_terms_not_all_of_them():
    total = sg.add(x, 2.0 * x, x, -4.0 * x, y)  # x's group sums to zero
    assert len(total.args) == 3  # x, -x and y: nan for infinite x still, +0 otherwise
    assert math.isnan(float(sg.evaluate(total, {x: math.inf, y: 1.0})))
    assert float(sg.evaluate(total, {x: 2.5, y: 1.0})) == 1.0
