"""The one-point call: the generated fast path (floats, ints or one float64 array straight into
``NAME_point``) gives the checked path's numbers bit for bit and refuses what it refuses, with
the same errors; ``out=`` fills a preallocated gradient and gives the plain call's numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symgraph as sg

BACKENDS = ["python", "numba"]


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request) -> str:
    return request.param  # (a parameter named backend: conftest marks the numba ones)


@pytest.fixture(scope="module")
def fn(backend) -> sg.CompiledFunction:
    x, y = sg.symbols("x y")
    # A quotient and a log: signed zeros, infinities and nan reach the outputs.
    # (strategy "straight": compiled at once, so every call below takes the compiled path)
    return sg.compile(x * x * y + sg.sin(y) + x / y + sg.log(x * x + 1), [x, y],
                      backend=backend, strategy="straight")


def _checked(fn: sg.CompiledFunction, point: list) -> bytes:
    """Value and gradient from the checked row kernel (``fn.kernels``), as bytes."""
    row, _ = fn.kernels("value_grad")
    out = np.empty(3)
    row(np.array(point, dtype=np.float64), out)
    return out.tobytes()


def _bytes(value: float, gradient: np.ndarray) -> bytes:
    return np.array([value, *gradient]).tobytes()


POINTS = [[3.0, 2.0], [-0.0, 0.0], [0.0, -0.0], [math.inf, 2.0], [1.5, -math.inf],
          [math.nan, 1.0], [3, 2], [3, 2.5], [True, 2.0], [False, True],
          [np.float64(3.0), 2.0], [np.float32(1.5), np.int64(-2)], [2**70, 1.0],
          [np.uint8(7), np.float16(0.5)]]


@pytest.mark.parametrize("point", POINTS, ids=repr)
def test_fast_and_checked_paths_give_the_same_bits(fn, point):
    want = _checked(fn, point)
    assert _bytes(*fn.value_and_grad(*point)) == want  # numbers, one per variable
    assert _bytes(*fn.value_and_grad(np.array(point, dtype=np.float64))) == want  # one array
    strided = np.repeat(np.array(point, dtype=np.float64), 2)[::2]  # (any strides: fast path)
    assert _bytes(*fn.value_and_grad(strided)) == want
    assert fn.grad(*point).tobytes() == want[8:]
    assert np.array(fn(*point)).tobytes() == want[:8]
    g = np.full(2, 7.0)
    assert _bytes(fn.value_and_grad(*point, out=g), g) == want
    g = np.full(2, 7.0)
    assert fn.grad(*point, out=g) is g and g.tobytes() == want[8:]


def test_out_gives_the_plain_calls_numbers_for_names_arrays_and_batches(fn):
    g = np.empty(2)
    value, gradient = fn.value_and_grad(x=3.0, y=2.0)
    assert fn.value_and_grad(x=3.0, y=2.0, out=g) == value and g.tolist() == gradient.tolist()
    x = np.array([3.0, 2.0])[::-1][::-1].copy()
    strided = np.empty(4)[::2]  # not contiguous: the checked path copies into it
    assert fn.value_and_grad(x, out=strided) == value and strided.tolist() == gradient.tolist()
    X = np.array([[3.0, 2.0], [1.0, -1.0], [0.5, 4.0]])
    values, grads = fn.value_and_grad(X)
    G = np.empty((3, 2))
    assert fn.value_and_grad(X, out=G).tolist() == values.tolist()
    assert G.tolist() == grads.tolist()
    G2 = np.empty((3, 2))
    assert fn.grad(X[:, 0], X[:, 1], out=G2) is G2 and G2.tolist() == grads.tolist()


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_out_batches_of_every_layout_get_the_plain_batchs_bits(backend, k):
    # A batch's gradient (the kernel's OUT[:, 1:]) goes into out row by row as k-float items
    # when out is C-contiguous (runtime.checked.copy_rows), as NumPy copies it otherwise.
    xs = sg.symbols(" ".join(f"x{i}" for i in range(k)))
    xs = list(xs) if k > 1 else [xs]
    fn = sg.compile(sum(sg.exp(x) * (i + 1) for i, x in enumerate(xs)) * xs[0], xs,
                    backend=backend, strategy="straight")
    X = np.random.default_rng(k).normal(size=(37, k))
    values, grads = fn.value_and_grad(X)
    for out in (np.full((37, k), 7.0), np.full((37, k), 7.0, order="F"),
                np.full((37, 2 * k), 7.0)[:, ::2], np.full((74, k), 7.0)[::2]):
        assert fn.value_and_grad(X, out=out).tobytes() == values.tobytes()
        assert out.tobytes() == np.ascontiguousarray(grads).tobytes()
        out[...] = 7.0
        assert fn.grad(X, out=out) is out and out.tobytes() == np.ascontiguousarray(grads).tobytes()


def test_copy_rows_copies_short_rows_as_items_and_anything_else_as_numpy_does():
    from symgraph.runtime.checked import copy_rows

    OUT = np.arange(4 * 21.0).reshape(21, 4)
    for out, rows in ((np.empty((21, 3)), OUT[:, 1:]), (np.empty((21, 1)), OUT[:, 1:2]),
                      (np.empty(3), OUT[5, 1:]), (np.empty((21, 2)), OUT[:, ::2]),
                      (np.empty((3, 21)).T, OUT[:, 1:])):
        copy_rows(out, rows)
        assert out.tolist() == rows.tolist()
    memory = np.arange(100.0)  # out overlapping its rows: left to NumPy, which copies first
    want = memory[1:81].reshape(20, 4)[:, :3].copy()
    copy_rows(memory[:60].reshape(20, 3), memory[1:81].reshape(20, 4)[:, :3])
    assert memory[:60].reshape(20, 3).tolist() == want.tolist()


@pytest.mark.parametrize("out", [np.empty(3), np.empty(2, np.float32), np.empty((1, 2)),
                                 [0.0, 0.0], 1.0, np.empty(2, np.int64)],
                         ids=["short", "float32", "2-D", "list", "float", "int64"])
def test_out_of_the_wrong_shape_or_dtype_is_refused_naming_out(fn, out):
    with pytest.raises(ValueError, match=r"value_and_grad: out must be a writeable float64 "
                                         r"array of shape \(2,\)"):
        fn.value_and_grad(3.0, 2.0, out=out)
    with pytest.raises(ValueError, match=r"grad: out must be a writeable float64 array"):
        fn.grad(np.array([3.0, 2.0]), out=out)


def test_a_read_only_out_is_refused_and_left_unwritten(fn):
    g = np.zeros(2)
    g.flags.writeable = False
    with pytest.raises(ValueError, match="got a read-only array"):
        fn.value_and_grad(3.0, 2.0, out=g)
    assert g.tolist() == [0.0, 0.0]


@pytest.mark.parametrize(("bad", "error", "message"), [
    (None, TypeError, r"the value of 'x' \(argument 0\) must be real numbers; got None"),
    (1 + 2j, TypeError, r"the value of 'x' \(argument 0\) must be real numbers; got complex"),
    ("1.5", TypeError, r"the value of 'x' \(argument 0\) must be real numbers; got the text"),
    (np.ma.masked, TypeError, r"the value of 'x' \(argument 0\) is a masked array"),
    (10**400, OverflowError, "int too large to convert to float")], ids=repr)
def test_refused_numbers_raise_the_checked_paths_error_through_the_fast_path(fn, bad, error,
                                                                           message):
    for call in (fn.value_and_grad, fn.grad, fn):
        with pytest.raises(error, match=message):
            call(bad, 2.0)
    with pytest.raises(error, match=message):
        fn.value_and_grad(bad, 2.0, out=np.empty(2))


def test_the_numba_module_holds_the_point_kernels_and_their_api(fn):
    if fn.backend != "numba":
        pytest.skip("the Python backend's points take the checked path")
    assert "def value_grad_point(_x, _g):" in fn.source
    assert "def value_grad_api(" in fn.source and "def value_api(" in fn.source
    assert fn.value_and_grad.__name__ == "value_and_grad" and fn.grad.__doc__


def test_an_interpreted_function_takes_the_fast_path_once_it_has_switched_with_numba():
    # strategy "auto" interprets first (runtime.interpret); once the Numba module is made the
    # methods are the module's one-point functions, giving the interpreter's numbers.
    x, y = sg.symbols("x y")
    fn = sg.compile(x * sg.exp(y) / (1 + x * x), [x, y])
    interpreted = fn.value_and_grad(0.5, -2.0)
    assert fn.value_and_grad.__module__ == "symgraph.api"
    fn.kernels("value_grad")  # asking for the raw kernels makes the module: the switch
    assert fn.value_and_grad.__module__ == fn.module.__name__
    value, gradient = fn.value_and_grad(0.5, -2.0)
    assert value == pytest.approx(interpreted[0], rel=1e-15)
    np.testing.assert_allclose(gradient, interpreted[1], rtol=1e-15)
    out = np.empty(2)
    assert fn.grad(0.5, -2.0, out=out) is out and np.array_equal(out, gradient)


@pytest.mark.parametrize("point", POINTS, ids=repr)
def test_value_and_grad_floats_gives_value_and_grads_bits_as_floats(fn, point):
    value, gradient = fn.value_and_grad_floats(*point)
    assert type(value) is float and type(gradient) is tuple
    assert all(type(g) is float for g in gradient)
    assert _bytes(value, np.array(gradient)) == _checked(fn, point)


@pytest.mark.parametrize(("bad", "error", "message"), [
    ((None, 2.0), TypeError, r"value_and_grad_floats: the value of 'x' \(argument 0\) must be "
                             r"real numbers; got None"),
    ((3.0, 1 + 2j), TypeError, r"the value of 'y' \(argument 1\) must be real numbers; got "
                               "complex"),
    (("1.5", 2.0), TypeError, r"the value of 'x' \(argument 0\) must be real numbers; got the "
                              "text '1.5'"),
    ((np.ma.masked, 2.0), TypeError, r"the value of 'x' \(argument 0\) is a masked array"),
    ((np.array([1.0, 2.0]), 2.0), TypeError, r"the value of 'x' \(argument 0\) must be one "
                                             r"real number; got an array of shape \(2,\)"),
    ((np.array([3.0, 2.0]),), TypeError, r"takes 2 number\(s\), one per variable \['x', 'y'\]; "
                                         "got 1"),
    ((3.0, 2.0, 1.0), TypeError, r"takes 2 number\(s\), one per variable \['x', 'y'\]; got 3"),
    ((10**400, 2.0), OverflowError, r"the value of 'x' \(argument 0\): int too large")],
    ids=["None", "complex", "text", "masked", "array", "one array", "three", "big int"])
def test_value_and_grad_floats_refuses_what_is_not_one_number_per_variable_naming_it(
        fn, bad, error, message):
    fn.value_and_grad_floats(3.0, 2.0)  # (compiled: the refusals come through its entry)
    with pytest.raises(error, match=message):
        fn.value_and_grad_floats(*bad)


def test_value_and_grad_floats_is_its_own_cpython_entry_once_compiled_with_numba(fn):
    # runtime.fastcall: no Python frame between the caller and the machine code, which takes
    # floats, ints and their subclasses itself and hands the rest to the checked path.
    if fn.backend != "numba":
        pytest.skip("the Python backend's points take the checked path")
    fn.value_and_grad_floats(3.0, 2.0)  # (a first call compiles the floats kernel)
    method = fn.value_and_grad_floats
    assert type(method).__name__ == "builtin_function_or_method"
    assert method.__name__ == "value_and_grad_floats" and "scalar expression" in method.__doc__

    class Float(float):
        pass

    for point in ([Float(3.0), 2.0], [3.0, Float(-0.5)], [np.float64(1.5), 2], [7, -3]):
        value, gradient = method(*point)
        assert type(value) is float and type(gradient) is tuple
        assert _bytes(value, np.array(gradient)) == _checked(fn, [float(v) for v in point])


def test_value_and_grad_floats_keeps_no_reference_to_its_arguments_or_results(fn):
    import sys

    fn.value_and_grad_floats(3.0, 2.0)
    x, y, text = 1.25e3 * 3, 2.0 ** 0.5, "not a number"
    before = [sys.getrefcount(v) for v in (x, y, text)]
    for _ in range(1000):
        value, gradient = fn.value_and_grad_floats(x, y)  # the compiled path
        with pytest.raises(TypeError):
            fn.value_and_grad_floats(text, y)  # the checked path, from inside it
    assert [sys.getrefcount(v) for v in (x, y, text)] == before
    assert sys.getrefcount(gradient) == 2 and sys.getrefcount(value) == 2  # (ours alone)


@pytest.mark.parametrize("strategy", ["straight", "tape", "auto"])
def test_value_and_grad_floats_gives_value_and_grads_numbers_with_every_strategy(strategy):
    x, y, z = sg.symbols("x y z")
    fn = sg.compile(sg.exp(x * y) / (1 + z * z) + sg.sqrt(x + y * y), [x, y, z],
                    strategy=strategy)
    for point in ([0.5, -1.5, 2.0], [1, 2, 3], [0.0, 0.25, -0.0]):
        value, gradient = fn.value_and_grad(*point)
        assert fn.value_and_grad_floats(*point) == (value, tuple(gradient.tolist()))


def test_value_and_grad_floats_is_the_compiled_entry_once_an_interpreted_function_has_numba():
    x, y = sg.symbols("x y")
    fn = sg.compile(sg.log(1 + x * x) * sg.cos(y), [x, y])  # strategy "auto": interpreted
    kept = fn.value_and_grad_floats
    before = kept(0.5, -2.0)
    assert "entry" not in kept.__code__.co_freevars  # the checked path
    fn.kernels("value_grad")  # the switch: the Numba module is made, the methods rebound
    fn.value_and_grad_floats(0.5, -2.0)  # (its first call compiles the floats kernel)
    assert type(fn.value_and_grad_floats).__name__ == "builtin_function_or_method"
    assert kept(0.5, -2.0) == fn.value_and_grad_floats(0.5, -2.0)  # a kept one calls it
    value, gradient = fn.value_and_grad_floats(0.5, -2.0)
    assert value == pytest.approx(before[0], rel=1e-15)
    np.testing.assert_allclose(gradient, before[1], rtol=1e-15)
    with pytest.raises(TypeError, match=r"the value of 'y' \(argument 1\) must be real"):
        fn.value_and_grad_floats(0.5, "2")


def test_value_and_grad_floats_needs_a_scalar_expression():
    x, y = sg.symbols("x y")
    fn = sg.compile([x * y, x + y], [x, y], backend="python")
    with pytest.raises(TypeError, match="value_and_grad_floats needs a scalar expression"):
        fn.value_and_grad_floats(1.0, 2.0)


@pytest.mark.numba
def test_value_and_grad_floats_of_seventy_inputs_is_the_compiled_entry():
    xs = sg.symbols(" ".join(f"x{i}" for i in range(70)))
    fn = sg.compile(sum(x * y for x, y in zip(xs, xs[1:])), list(xs), strategy="straight")
    point = [0.5 * i - 7.0 for i in range(70)]
    fn.value_and_grad_floats(*point)  # (its first call compiles the floats kernel)
    assert type(fn.value_and_grad_floats).__name__ == "builtin_function_or_method"
    value, gradient = fn.value_and_grad(*point)
    assert fn.value_and_grad_floats(*point) == (value, tuple(gradient.tolist()))


def test_value_and_grad_floats_past_the_point_kernels_inputs_gives_the_rows_bits(
        backend, monkeypatch):
    # More inputs than a point kernel takes (MAX_INPUTS, made small here): the checked path.
    from symgraph.backends.numba import point as point_kernels

    monkeypatch.setattr(point_kernels, "MAX_INPUTS", 8)
    xs = sg.symbols(" ".join(f"x{i}" for i in range(12)))
    fn = sg.compile(sum(sg.log(1 + x * x) * (i + 1) for i, x in enumerate(xs)), list(xs),
                    backend=backend, strategy="straight")
    point = [0.75 * i - 3.0 for i in range(12)]
    fn.value_and_grad_floats(*point)
    assert type(fn.value_and_grad_floats).__name__ != "builtin_function_or_method"
    row, _ = fn.kernels("value_grad")
    want = np.empty(13)
    row(np.array(point), want)
    for given in (point, [*point[:5], 2, True, np.float32(0.5), *point[8:]]):
        value, gradient = fn.value_and_grad_floats(*given)
        assert type(value) is float and all(type(g) is float for g in gradient)
        if given is point:
            assert _bytes(value, np.array(gradient)) == want.tobytes()
        else:
            assert fn.value_and_grad(*given)[0] == value
    with pytest.raises(TypeError, match=r"the value of 'x10' \(argument 10\) must be real "
                                        "numbers; got the text"):
        fn.value_and_grad_floats(*point[:10], "1.5", *point[11:])


def test_the_floats_kernel_lowered_into_another_numba_function_gives_its_numbers():
    # (the entry runtime.fastcall emits is for NAME_floats' own signature; another function
    # calling the kernel, with another result type, compiles without one)
    import numba

    x, y = sg.symbols("x y")
    fn = sg.compile(x * sg.sin(y) + x / y, [x, y], strategy="straight")
    inner = fn.module._value_grad_floats

    @numba.njit
    def summed(a, b):
        v, g = inner((a, b))
        return v + g[0] + g[1]

    value, gradient = fn.value_and_grad(1.5, 2.0)
    assert summed(1.5, 2.0) == value + gradient[0] + gradient[1]


@pytest.mark.numba
def test_methods_kept_before_the_first_call_resolve_their_kernel_once(tmp_path, monkeypatch):
    # `f = fn.value_and_grad_floats` taken before the first call compiles is the first-call
    # wrapper for ever (the call rebinds the instance's methods, not `f`): each later call
    # must find the entry resolved then, not resolve (type and look up) it again.
    from symgraph.runtime import points

    resolved = []
    resolve = points.resolve
    monkeypatch.setattr(points, "resolve", lambda *a: resolved.append(a) or resolve(*a))
    x, y = sg.symbols("x y")
    fn = sg.compile(sg.tanh(x * y) + sg.exp(y) / x, [x, y], cache_dir=tmp_path,
                    strategy="straight")
    floats, value_and_grad = fn.value_and_grad_floats, fn.value_and_grad
    for k in range(1, 6):
        assert floats(k, 0.5) == fn.value_and_grad_floats(k, 0.5)
        value, gradient = value_and_grad(k, 0.5)
        assert (value, tuple(gradient)) == floats(k, 0.5)
    assert len(resolved) == 2  # the floats kernel's entry and the point kernel's, once each
