"""NumPy's protocols on nodes and symbolic arrays, and tracing Python functions: what each
ufunc builds, n-ary reductions, the errors, names, argument structure and deep traces."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import symgraph as sg
from symgraph.cli.input import parse_point
from symgraph.frontends.trace import trace
from symgraph.ir.numpy_ufuncs import BUILDERS

x, y = sg.symbols("x y")
CANDIDATES = (0.3, 0.7, 1.6, 2.5, -0.4, -1.7)


def _numpy_ufuncs():
    return sorted(name for name in BUILDERS
                  if isinstance(getattr(np, name, None), np.ufunc) and getattr(np, name).nin <= 2)


@pytest.mark.parametrize("name", _numpy_ufuncs())
def test_every_mapped_numpy_ufunc_evaluates_as_numpy_does(name):
    ufunc = getattr(np, name)
    args = (x, y)[:ufunc.nin]
    expr = ufunc(*args)
    assert isinstance(expr, sg.Node)
    checked = 0
    for a in CANDIDATES:
        for b in CANDIDATES[::-1]:
            values = (a, b)[:ufunc.nin]
            with np.errstate(all="ignore"):
                expected = float(ufunc(*values))
            if not math.isfinite(expected):
                continue
            got = float(sg.evaluate(expr, dict(zip("xy", values))))
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), (values, got, expected)
            checked += 1
    assert checked


def test_np_functions_of_a_node_are_the_ops_themselves():
    assert np.sin(x) is sg.sin(x)
    assert np.hypot(x, y) is sg.hypot(x, y)
    assert np.maximum(x, 0.0) is sg.max(x, 0.0)
    assert np.absolute(x) is np.abs(x) is sg.abs(x)
    assert np.arctan2(y, x) is sg.atan2(y, x)
    assert np.where(x > 0, x, 0.0) is sg.where(x > 0, x, 0.0)
    assert np.float64(2.0) * x is 2.0 * x
    assert math.floor(x) is sg.floor(x) and math.ceil(x) is sg.ceil(x)


def test_object_arrays_of_nodes_work_elementwise():
    plain = np.array([x, y], dtype=object)
    assert [e is sg.sin(v) for e, v in zip(np.sin(plain), (x, y))] == [True, True]
    assert np.arctan2(plain, plain)[1] is sg.atan2(y, y)
    assert np.log1p(plain)[0] is sg.log1p(x)
    mixed = np.ones(2) * x  # a float array and a node: a symbolic array
    assert isinstance(mixed, sg.SymbolicArray) and mixed[0] is 1.0 * x


def test_sums_products_and_matrix_products_are_single_n_ary_nodes():
    w = sg.SymbolicArray([sg.symbol(f"w[{i}]") for i in range(5)])
    total = np.sum(w)
    assert total.op == "add" and len(total.args) == 5
    assert w.sum() is total
    assert np.prod(w).op == "mul" and len(np.prod(w).args) == 5
    mean = np.mean(w)
    assert mean.op == "div" and mean.args[0] is total and mean.args[1].value == 5.0
    W = np.arange(1.0, 16.0).reshape(3, 5)
    for entry in W @ w:
        assert entry.op == "add" and len(entry.args) == 5
    assert np.dot(w, w).op == "add" and len(np.dot(w, w).args) == 5
    assert (w @ w) is np.dot(w, w)
    column = np.sum(w.reshape(5, 1) * np.ones((5, 2)), axis=0)
    assert column.shape == (2,) and len(column[0].args) == 5


def test_a_ufunc_without_an_op_names_itself():
    with pytest.raises(TypeError, match=r"np\.gcd has no symgraph op"):
        np.gcd(x, y)
    with pytest.raises(TypeError, match=r"np\.spacing has no symgraph op"):
        np.spacing(sg.SymbolicArray([x, y]))


def test_math_functions_and_python_branches_on_symbols_explain_what_to_use():
    with pytest.raises(TypeError, match=r"np\.sin\(x\) or sg\.sin\(x\)"):
        math.sin(x)
    with pytest.raises(TypeError, match=r"symgraph\.where.*symgraph\.dynamic\.freeze"):
        bool(x > 0)
    with pytest.raises(TypeError, match="np.floor"):
        int(x)

    def branchy(a):
        if a > 0:
            return a
        return -a

    with pytest.raises(TypeError, match=r"symgraph\.where") as info:
        sg.compile(branchy, backend="python")
    assert any("while tracing branchy" in note for note in info.value.__notes__)
    with pytest.raises(TypeError, match="np.where"):
        bool(sg.SymbolicArray([x, y]) > 0)


def test_a_float_array_cannot_hold_symbols_and_says_so():
    def fill(w):
        out = np.zeros(2)
        out[0] = w[0]
        return out.sum()

    with pytest.raises(TypeError, match="dtype=object"):
        trace(fill, example=np.zeros(2))


def test_element_symbols_print_parse_and_generate_valid_identifiers():
    traced = trace(lambda w, W: np.sum(W @ w) * w[0], example=(np.zeros(2), np.zeros((2, 2))))
    assert [s.name for s in traced.symbols] == [
        "w[0]", "w[1]", "W[0,0]", "W[0,1]", "W[1,0]", "W[1,1]"]
    out = traced.outputs[0]
    assert sg.parse(sg.to_text(out, tidy=False)) is out
    assert "w_{0}" in sg.to_latex(out)
    fn = sg.compile(lambda w, W: np.sum(W @ w) * w[0], example=(np.zeros(2), np.zeros((2, 2))),
                    backend="python")
    assert "w_0_ = " in fn.source and "W_0_1_ = " in fn.source
    assert parse_point(["w[0]=1,W[0,1]=2"], ["W[0,1]", "w[0]"]) == {"W[0,1]": 2.0, "w[0]": 1.0}


def f_structured(x, w, scale=2.0):
    return scale * np.sin(x) * np.sum(w ** 2) + x * w[1]


def test_traced_calls_take_and_return_the_functions_structure():
    fn = sg.compile(f_structured, example=(0.0, np.zeros(3)), backend="python")
    w = np.array([0.5, -1.0, 2.0])
    value, (gx, gw) = fn.value_and_grad(0.3, w)
    assert value == pytest.approx(f_structured(0.3, w), rel=1e-14)
    assert isinstance(gx, float) and gw.shape == (3,)
    assert gx == pytest.approx(2 * math.cos(0.3) * np.sum(w ** 2) + w[1])
    np.testing.assert_allclose(gw, 2 * math.sin(0.3) * 2 * w + np.array([0, 0.3, 0]))
    assert fn(x=0.3, w=w) == pytest.approx(value)
    (hxx, hxw), (hwx, hww) = fn.hessian(0.3, w)
    assert isinstance(hxx, float) and hxw.shape == (3,) and hww.shape == (3, 3)
    np.testing.assert_allclose(hwx, hxw)
    flat = fn.flatten(0.3, w)
    np.testing.assert_array_equal(flat, [0.3, 0.5, -1.0, 2.0])  # the documented flat order
    np.testing.assert_allclose(fn.compiled.grad(flat), np.concatenate([[gx], gw]))


def test_batches_add_a_leading_axis_and_points_broadcast():
    fn = sg.compile(f_structured, example=(0.0, np.zeros(3)), backend="python")
    rng = np.random.default_rng(0)
    xs, ws = rng.normal(size=4), rng.normal(size=(4, 3))
    values, (gxs, gws) = fn.value_and_grad(xs, ws)
    assert values.shape == (4,) and gxs.shape == (4,) and gws.shape == (4, 3)
    for i in range(4):
        value, (gx, gw) = fn.value_and_grad(float(xs[i]), ws[i])
        assert values[i] == pytest.approx(value) and gxs[i] == pytest.approx(gx)
        np.testing.assert_allclose(gws[i], gw)
    same_x = fn(0.3, ws)  # x is the same for every row
    np.testing.assert_allclose(same_x, [f_structured(0.3, w) for w in ws])


def test_wrt_names_parameters_and_defaults_stay_constants():
    fn = sg.compile(f_structured, example=(0.0, np.zeros(3)), wrt="w", backend="python")
    grad = fn.grad(0.3, np.ones(3))
    assert grad.shape == (3,)  # one parameter differentiated: its gradient itself
    scaled = sg.compile(f_structured, example={"x": 0.0, "w": np.zeros(3), "scale": 0.0},
                        backend="python")
    assert [p.name for p in scaled.trace.parameters] == ["x", "w", "scale"]
    assert scaled(0.3, np.ones(3), 5.0) == pytest.approx(f_structured(0.3, np.ones(3), 5.0))
    with pytest.raises(TypeError, match="scale"):
        fn(0.3, np.ones(3), scale=5.0)


def test_vector_outputs_and_tuples_of_outputs_keep_their_shapes():
    def fields(p, q):
        return np.outer(p, p) * q, np.sum(p) * q

    fn = sg.compile(fields, example=(np.zeros(2), 0.0), backend="python")
    p = np.array([1.0, 2.0])
    matrix, scalar = fn(p, 3.0)
    np.testing.assert_allclose(matrix, np.outer(p, p) * 3.0)
    assert scalar == pytest.approx(9.0)
    (dm_dp, dm_dq), (ds_dp, ds_dq) = fn.jacobian(p, 3.0)
    assert dm_dp.shape == (2, 2, 2) and dm_dq.shape == (2, 2) and ds_dp.shape == (2,)
    assert ds_dq == pytest.approx(3.0)
    np.testing.assert_allclose(dm_dq, np.outer(p, p))


def test_keyword_only_parameters_are_traced_and_given_by_name():
    def f(x, *, w):
        return x * np.sum(w)

    fn = sg.compile(f, example={"x": 0.0, "w": np.zeros(2)}, backend="python")
    assert fn(2.0, w=np.array([1.0, 3.0])) == pytest.approx(8.0)


def test_grad_jacobian_hessian_of_python_functions_are_functions():
    def energy(q, k=3.0):
        return 0.5 * k * np.sum(np.diff(q) ** 2)

    q = np.array([0.0, 1.5, 1.0])
    np.testing.assert_allclose(sg.grad(energy)(q), [-4.5, 6.0, -1.5])
    np.testing.assert_allclose(sg.hessian(energy)(q), 3.0 * np.array(
        [[1, -1, 0], [-1, 2, -1], [0, -1, 1]]))
    jac = sg.jacobian(lambda t: np.array([np.cos(t[0]), t[0] * t[1]]))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(jac, [[-math.sin(1.0), 0.0], [2.0, 1.0]])
    gx, gw = sg.grad(f_structured)(0.3, np.ones(3))
    compiled = sg.compile(f_structured, example=(0.0, np.zeros(3)), backend="python")
    cx, cw = compiled.grad(0.3, np.ones(3))
    assert gx == pytest.approx(cx) and np.allclose(gw, cw)


def test_a_function_of_ten_thousand_elements_traces_without_recursion():
    limit = sys.getrecursionlimit()
    n = 10_000

    def f(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2) + np.sum(
            np.sin(x) ** 2) + np.prod(np.cos(x[:50]))

    traced = trace(f, example=np.zeros(n))
    out = traced.outputs[0]
    # np.sum of the n - 1 Rosenbrock terms is one add (the terms' own small sums flatten in)
    assert out.op == "add" and max(len(a.args) for a in out.args if a.op == "add") >= n - 1
    gradient = sg.grad(out, traced.symbols)
    point = np.random.default_rng(2).normal(size=n) * 0.3
    got = np.array(sg.evaluate(gradient, {s: v for s, v in zip(traced.symbols, point)}),
                   dtype=float)
    expected = np.zeros(n)
    expected[:-1] += -400.0 * point[:-1] * (point[1:] - point[:-1] ** 2) - 2.0 * (1 - point[:-1])
    expected[1:] += 200.0 * (point[1:] - point[:-1] ** 2)
    expected += 2 * np.sin(point) * np.cos(point)
    cosines = np.cos(point[:50])
    expected[:50] += -np.sin(point[:50]) * np.prod(cosines) / cosines
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
    assert sys.getrecursionlimit() == limit


def test_importing_symgraph_does_not_import_sympy():
    import subprocess

    code = "import sys, symgraph; print('sympy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_numpy_functions_of_graph_tensors_build_tensors():
    from symgraph.graphs.tensor import Tensor, symbolic

    W, v = symbolic("W", (2, 3)), symbolic("v", (3,))
    hidden = np.tanh(W @ v + 1.0)
    assert isinstance(hidden, Tensor) and hidden.shape == (2,)
    assert hidden.nodes[0] is sg.tanh((W @ v).nodes[0] + 1.0)
    total = np.sum(hidden)
    assert isinstance(total, Tensor) and total.nodes[()] is hidden.sum().nodes[()]
    assert (np.ones(3) - v).nodes[1] is 1.0 - v.nodes[1]


def _library(x, A):
    out = np.zeros_like(x)  # an object array for a symbolic x: it holds nodes
    for i in range(len(x)):
        out[i] = x[i] ** 2
    return [np.einsum("i,i->", x, x), np.var(x), np.std(x), np.average(x, weights=[1, 2, 3]),
            np.trace(A), np.sum(out), np.linalg.norm(A, axis=1)[0], np.logaddexp.reduce(x),
            np.cumprod(x)[-1], np.concatenate([x, x]).sum(), np.amax(A),
            np.max(A, axis=0)[1], np.vstack([x, x]).T[0, 1],
            np.sum(A, axis=(0, 1), keepdims=True)[0, 0], x.dot(x), np.tensordot(A, A, 2),
            np.square(x).mean(), np.matmul(A, x)[0], np.mean(A, axis=0)[2]]


def test_numpy_library_functions_run_on_symbols_as_on_numbers():
    traced = trace(_library, example=(np.zeros(3), np.zeros((3, 3))))
    rng = np.random.default_rng(0)
    xv, Av = rng.normal(size=3), rng.normal(size=(3, 3))
    point = dict(zip(traced.symbols, np.concatenate([xv, Av.ravel()])))
    got = np.array(sg.evaluate(traced.outputs, point), dtype=float)
    np.testing.assert_allclose(got, np.array(_library(xv, Av), dtype=float), rtol=1e-13)


def test_examples_given_as_tuples_lists_dicts_or_a_lone_value_agree():
    def total(w):
        return np.sum(w)

    def two(x, w):
        return x * np.sum(w)

    assert [p.shape for p in trace(total, example=[0.0, 0.0, 0.0]).parameters] == [(3,)]
    assert [p.shape for p in trace(total, example=[np.zeros(3)]).parameters] == [(3,)]
    assert [p.shape for p in trace(total, example=np.zeros((2, 2))).parameters] == [(2, 2)]
    for example in ((1.0, np.zeros(3)), [1.0, np.zeros(3)], {"w": np.zeros(3)}):
        assert [p.shape for p in trace(two, example=example).parameters] == [(), (3,)]
