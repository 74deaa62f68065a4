"""A batch axis that is a loop (compile(..., data=..., reduce=...)): the reduction over rows,
its gradient and Hessian w.r.t. the parameters equal the unrolled graph's (one symbol per data
value, summed as one expression; compiled by the Python backend: the oracle) to rounding, in
both backends, whatever the number of threads (bit for bit), and through Dask."""

from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.reduction import ReducedFunction, pairwise_sum

W, b, c, x, y = sg.symbols("W b c x y")
u = [sg.symbol("u0"), sg.symbol("u1")]  # a data row of two columns
ROW = sg.tanh(W * x + b) * y + sg.exp(c * u[0]) - (W * u[1] - y) ** 2 / (1 + c**2)
PARAMS = np.array([0.7, -0.3, 0.2])
N = 21


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    return rng.normal(size=N), rng.normal(size=N), rng.normal(size=(N, 2))


@pytest.fixture(scope="module")
def unrolled(data):
    """sum over rows of ROW with a symbol per data value: value, gradient, Hessian."""
    xs, ys, us = data
    names = [sg.symbols(f"x{i} y{i} ua{i} ub{i}") for i in range(N)]
    total = sg.const(0.0)
    for sx, sy, sa, sb in names:
        total = total + sg.tanh(W * sx + b) * sy + sg.exp(c * sa) - (W * sb - sy) ** 2 / (
            1 + c**2)
    symbols = [s for group in names for s in group]
    fn = sg.compile(total, [W, b, c, *symbols], wrt=[W, b, c], hessian=True, backend="python")
    point = np.concatenate([PARAMS, np.column_stack([xs, ys, us]).ravel()])
    value, gradient = fn.value_and_grad(point)
    return value, gradient, fn.hessian(point)


@pytest.fixture(scope="module", params=["python", "numba"])
def reduced(request):
    backend = request.param
    return {r: sg.compile(ROW, [W, b, c], data=[x, y, u], reduce=r, hessian=True,
                          backend=backend) for r in ("sum", "mean")}


def test_sum_and_mean_value_gradient_hessian_equal_the_unrolled_graphs(reduced, data,
                                                                       unrolled):
    value, gradient, hessian = unrolled
    for reduce, scale in (("sum", 1.0), ("mean", 1.0 / N)):
        fn = reduced[reduce]
        v, g = fn.value_and_grad(PARAMS, *data)
        np.testing.assert_allclose(v, value * scale, rtol=1e-13)
        np.testing.assert_allclose(g, gradient * scale, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(fn.hessian(PARAMS, *data), hessian * scale, rtol=1e-12,
                                   atol=1e-14)
        np.testing.assert_allclose(fn(PARAMS, *data), value * scale, rtol=1e-13)


def test_numba_big_row_programs_summed_one_row_at_a_time_equal_the_unrolled_graphs(
        monkeypatch, data, unrolled):
    # Row programs above MAX_SUM_STEPS run the lane kernel with blocks of one row (libm).
    from symgraph.backends.numba import reduce as numba_reduce

    monkeypatch.setattr(numba_reduce, "MAX_SUM_STEPS", 0)
    fn = sg.compile(ROW, [W, b, c], data=[x, y, u], reduce="sum", hessian=True)
    assert "block=1," in fn.source
    value, gradient, hessian = unrolled
    v, g = fn.value_and_grad(PARAMS, *data)
    np.testing.assert_allclose(v, value, rtol=1e-13)
    np.testing.assert_allclose(g, gradient, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(fn.hessian(PARAMS, *data), hessian, rtol=1e-12, atol=1e-14)


def test_per_row_outputs_are_the_row_expressions_at_each_row(data):
    xs, ys, us = data
    fn = sg.compile(ROW, [W, b, c], data=[x, y, u], reduce=None, backend="python")
    rows = fn(PARAMS, *data)
    expected = [sg.evaluate(ROW, {"W": PARAMS[0], "b": PARAMS[1], "c": PARAMS[2], "x": xs[i],
                                  "y": ys[i], "u0": us[i, 0], "u1": us[i, 1]})
                for i in range(N)]
    np.testing.assert_allclose(rows, expected, rtol=1e-14)
    assert fn.grad(PARAMS, *data).shape == (N, 3)
    assert fn.hessian(PARAMS, *data).shape == (N, 3, 3)


def test_numba_reduction_is_the_same_bits_on_one_and_two_threads():
    numba = pytest.importorskip("numba")
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread")  # (a one-CPU machine: Numba refuses a second thread)
    fn = sg.compile((W * x + b - y) ** 2, [W, b], data=[x, y], reduce="mean", hessian=True)
    rng = np.random.default_rng(1)
    xs = rng.normal(size=70_001)  # 18 chunks, the last one short
    ys = 3 * xs + 1 + rng.normal(size=xs.size)
    before = numba.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            results.append((*fn.value_and_grad([2.0, 1.0], xs, ys),
                            fn.hessian([2.0, 1.0], xs, ys)))
    finally:
        numba.set_num_threads(before)
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)
    r = 2.0 * xs + 1.0 - ys
    np.testing.assert_allclose(results[0][0], np.mean(r * r), rtol=1e-13)
    np.testing.assert_allclose(results[0][1], [np.mean(2 * r * xs), np.mean(2 * r)], rtol=1e-12)


def test_pairwise_sum_is_fixed_by_the_number_of_chunks():
    parts = np.array([[1e16], [1.0], [-1e16], [1.0], [3.0]])
    assert pairwise_sum(parts)[0] == ((1e16 + 1.0) + (-1e16 + 1.0)) + 3.0
    assert pairwise_sum(np.zeros((0, 2))).tolist() == [0.0, 0.0]


def test_bad_data_and_parameters_are_refused_by_name():
    fn = sg.compile((W * x + b - y) ** 2, [W, b], data=[x, y], backend="python")
    with pytest.raises(ValueError, match="2 parameter value"):
        fn([1.0], [1.0], [2.0])
    with pytest.raises(ValueError, match="data array 1 has 2 rows"):
        fn([1.0, 2.0], [1.0], [2.0, 3.0])
    with pytest.raises(ValueError, match=r"data array 0 must have shape \(N\)"):
        fn([1.0, 2.0], [[1.0]], [2.0])
    with pytest.raises(ValueError, match="also a parameter"):
        sg.compile(W * x, [W], data=[W], backend="python")
    with pytest.raises(ValueError, match="reduce must be one of"):
        sg.compile(W * x, [W], data=[x], reduce="max", backend="python")
    assert isinstance(fn, ReducedFunction)
    assert fn([1.0, 2.0], np.zeros(0), np.zeros(0)) == 0.0  # no rows: the empty sum
