"""Sums of small terms that differ in their numbers (coefficients, data) fused kind by kind,
their constants lifted into tables, and their batches run with the points as lanes
(runtime.separable, backends.numba.sum_lanes): every kernel against the symbolic kernels of
the Python backend, on generated families too."""

from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from benchmarks import families
from symgraph.backends.registry import BACKENDS
from symgraph.runtime import separable

pytestmark = pytest.mark.numba


def _fused(f, args, wrt=None):
    found = separable.separable_sum(f, args, args if wrt is None else wrt,
                                    backend=BACKENDS["numba"], min_terms=2)
    assert found is not None
    return found


def _rates(n: int):
    """Not tuned on: Arrhenius-like terms, each its own two numbers, over three variables."""
    rng = np.random.default_rng(11)
    x = [sg.symbol(f"x{i}") for i in range(n)]
    T = sg.symbol("T")
    terms = [float(a) * sg.exp(-float(b) / T) * x[i] * x[(i + 1) % n] ** 2
             for i, (a, b) in enumerate(rng.uniform(0.5, 2.0, (n, 2)).round(3))]
    return sg.apply("add", *terms), [*x, T]


def test_terms_that_differ_in_their_numbers_share_one_kind_with_a_table_of_them():
    f, args = _rates(40)
    found = _fused(f, args)
    assert len(found.kinds) == 1  # 40 terms, one formula: its 2 numbers per term in a table
    kind = found.kinds[0]
    assert kind.values.shape == (40, 2) and kind.index.shape == (40, 3)
    dense = sg.compile(f, args, backend="python")
    rng = np.random.default_rng(2)
    rows, cols = sg.hessian_sparsity(f, args)
    for _ in range(3):
        p, v = rng.uniform(0.5, 2.0, (2, len(args)))
        value, gradient = found.value_and_grad(p)
        assert value == pytest.approx(dense(p), rel=1e-13)
        np.testing.assert_allclose(gradient, dense.grad(p), rtol=1e-13, atol=1e-14)
        hessian = dense.hessian(p)
        np.testing.assert_allclose(found.hessian_values(p), hessian[rows, cols], rtol=1e-12,
                                   atol=1e-13)
        np.testing.assert_allclose(found.hessp(p, v), hessian @ v, rtol=1e-12, atol=1e-13)


def test_a_chain_that_shares_its_numbers_keeps_them_in_the_shape():
    x = [sg.symbol(f"x{i}") for i in range(30)]
    f = sg.apply("add", *[100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
                          for i in range(29)])
    found = _fused(f, x)
    assert all(kind.values is None for kind in found.kinds)  # one kind: nothing to lift


def test_a_number_that_is_also_an_exponent_stays_in_the_shape():
    """2.0 is the coefficient and the exponent of 2*x**2: it stays a constant (x*x, not a
    power of a parameter), the other terms' coefficients are lifted."""
    x = [sg.symbol(f"x{i}") for i in range(20)]
    f = sg.apply("add", *[(2.0 if i % 5 == 0 else 1.5 + i) * x[i] ** 2 * x[(i + 1) % 20]
                          for i in range(20)])
    found = _fused(f, x)
    lifted = sorted(0 if kind.values is None else kind.values.shape[1] for kind in found.kinds)
    assert lifted == [0, 1]  # the four 2*x**2 terms, and the sixteen with their own number
    dense = sg.compile(f, x, backend="python")
    p = np.random.default_rng(4).uniform(-1, 1, 20)
    value, gradient = found.value_and_grad(p)
    assert value == pytest.approx(dense(p), rel=1e-13)
    np.testing.assert_allclose(gradient, dense.grad(p), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("name", ["arrhenius@9", "rational@12", "einstein_solid@8",
                                  "option_portfolio@6", "tiered_cost@10", "lennard_jones@4",
                                  "trig_series@9", "huber_regression@10"])
def test_fused_batches_give_the_symbolic_batches_numbers_on_generated_families(name):
    family, n = families.parse_name(name)
    f, args = family.make(n)
    found = _fused(f, args)
    low, high = family.box(len(args))
    X = np.random.default_rng(7).uniform(low, high, (77, len(args)))  # blocks and a rest
    dense = sg.compile(f, args, backend="python")
    OUT = np.empty((len(X), 1 + len(args)))
    found.batch("value_grad", X, OUT)
    np.testing.assert_allclose(OUT[:, 0], dense(X), rtol=1e-12)
    np.testing.assert_allclose(OUT[:, 1:], dense.grad(X), rtol=1e-11, atol=1e-12)
    values = np.empty((len(X), 1))
    found.batch("value", X, values)
    np.testing.assert_array_equal(values[:, 0], OUT[:, 0])
    for r in (0, 40, 76):  # a batch's point is the 1-point kernel's point (but vecmath's bit)
        value, gradient = found.value_and_grad(X[r])
        assert OUT[r, 0] == pytest.approx(value, rel=1e-14)
        np.testing.assert_allclose(OUT[r, 1:], gradient, rtol=1e-13, atol=1e-15)


def test_points_beyond_vecmath_range_and_nan_points_take_libm_and_numpys_answers():
    x = [sg.symbol(f"x{i}") for i in range(12)]
    f = sg.apply("add", *[(0.5 + i) * sg.sin(x[i] * x[(i + 1) % 12]) for i in range(12)])
    found = _fused(f, x)
    dense = sg.compile(f, x, backend="python")
    X = np.random.default_rng(1).uniform(-1, 1, (40, 12))
    X[3, 5] = 3e8  # sin of ~1e8: past vecmath's exact range, this point again with libm
    X[9, 0] = np.nan
    X[17, 2] = np.inf
    OUT = np.empty((40, 13))
    with np.errstate(invalid="ignore"):
        found.batch("value_grad", X, OUT)
        expected_values, expected_grads = dense(X), dense.grad(X)
    np.testing.assert_allclose(OUT[:, 0], expected_values, rtol=1e-12)
    np.testing.assert_allclose(OUT[:, 1:], expected_grads, rtol=1e-11, atol=1e-12)
    assert np.isnan(OUT[9, 0]) and np.isnan(OUT[17, 0])
    assert np.isfinite(OUT[3]).all()


def test_fused_batches_read_the_variables_columns_of_the_points():
    f, wrt = _rates(16)
    args = [sg.symbol("unused"), *wrt[::-1]]  # the variables in another order, and one more
    found = _fused(f, args, wrt)
    assert found.columns is not None
    dense = sg.compile(f, args, backend="python")
    X = np.random.default_rng(9).uniform(0.5, 2, (50, len(args)))
    OUT = np.empty((50, 1 + len(wrt)))
    found.batch("value_grad", X, OUT)
    position = [args.index(w) for w in wrt]
    np.testing.assert_allclose(OUT[:, 0], dense(X), rtol=1e-12)
    np.testing.assert_allclose(OUT[:, 1:], dense.grad(X)[:, position], rtol=1e-11)


def test_fused_batches_name_the_shapes_they_expect():
    f, args = _rates(8)
    found = _fused(f, args)
    with pytest.raises(ValueError, match=r"X of shape \(N, 9\) and OUT of shape \(N, 10\)"):
        found.batch("value_grad", np.zeros((4, 8)), np.zeros((4, 10)))
    with pytest.raises(ValueError, match=r"OUT of shape \(N, 1\)"):
        found.batch("value", np.zeros((4, 9)), np.zeros((4, 2)))


def test_a_big_sum_of_fewer_terms_is_fused_and_batches_as_the_symbolic_kernels(monkeypatch):
    """The rule for sums past FUSED_MIN_OPS operations (at ~2,000 and more), on a small one;
    batches on one thread and on several, an out= batch of another layout."""
    monkeypatch.setattr(separable, "FUSED_MIN_OPS", 50)
    monkeypatch.setattr(separable, "FUSED_MIN_TERMS", 8)
    f, args = _rates(24)
    assert separable.fused_min_terms(f) == 8
    fn = sg.compile(f, args)
    assert "fused" in repr(fn)
    dense = sg.compile(f, args, backend="python")
    X = np.random.default_rng(3).uniform(0.5, 2, (6000, len(args)))
    values, gradients = fn.value_and_grad(X)  # big enough for two threads
    np.testing.assert_allclose(values, dense(X), rtol=1e-12)
    np.testing.assert_allclose(gradients, dense.grad(X), rtol=1e-11, atol=1e-13)
    OUT = np.asfortranarray(np.empty((6000, 1 + len(args))))
    fn._built.batches["value_grad"](X, OUT)
    np.testing.assert_array_equal(OUT[:, 0], values)
    monkeypatch.setattr(separable, "FUSED_MIN_OPS", 10**9)
    assert separable.fused_min_terms(f) == separable.MIN_TERMS


def test_a_negated_or_weighted_sum_of_many_terms_is_split_into_its_terms():
    from symgraph.ad.terms import FACTORED_ARGS, split_terms

    x = [sg.symbol(f"x{i}") for i in range(12)]
    inner = sg.apply("add", *[sg.cos(x[i]) * x[(i + 1) % 12] for i in range(12)])
    few = sg.apply("add", *[sg.sin(x[i]) for i in range(FACTORED_ARGS)])
    for f, count in ((x[0] - inner, 13), (x[0] + 2.5 * inner, 13), (x[0] - 2.5 * few, 2)):
        terms = split_terms(f)
        assert len(terms) == count  # a few terms under one factor: one term's own formula
        point = {v: 0.1 * i - 0.3 for i, v in enumerate(x)}
        assert sum(sg.evaluate(t, point) for t in terms) == pytest.approx(
            sg.evaluate(f, point), rel=1e-14)
    found = _fused(x[0] - inner, x)
    dense = sg.compile(x[0] - inner, x, backend="python")
    p = np.linspace(-1, 1, 12)
    value, gradient = found.value_and_grad(p)
    assert value == pytest.approx(dense(p), rel=1e-13)
    np.testing.assert_allclose(gradient, dense.grad(p), rtol=1e-13, atol=1e-15)


def test_a_fused_functions_raw_kernels_and_op_counts_are_its_fused_ones(monkeypatch):
    monkeypatch.setattr(separable, "FUSED_MIN_OPS", 50)
    monkeypatch.setattr(separable, "FUSED_MIN_TERMS", 8)
    f, args = _rates(12)  # 49 operations
    monkeypatch.setattr(separable, "FUSED_MIN_OPS", 40)
    fn = sg.compile(f, args)
    assert "fused" in repr(fn)
    row, batch = fn.kernels("value_grad")
    X = np.random.default_rng(6).uniform(0.5, 2, (70, len(args)))
    OUT, out = np.empty((70, 1 + len(args))), np.empty(1 + len(args))
    batch(X, OUT)
    row(X[5], out)
    values, gradients = fn.value_and_grad(X)
    np.testing.assert_array_equal(OUT[:, 0], values)
    np.testing.assert_allclose(out[1:], gradients[5], rtol=1e-13)
    with pytest.raises(ValueError):
        batch(X[:, 1:], OUT)
    counts = fn.op_counts()
    assert fn._built._built is None  # no symbolic kernels made for them
    assert 0 < counts["value"] < counts["value_grad"]
    assert fn.op_counts(weighted=True)["value_grad"] >= counts["value_grad"]


def test_the_runtimes_tile_copies_an_8_by_8_tile_transposed_bit_for_bit():
    from numba import njit

    from symgraph.backends.numba.runtime import plain, tile

    @njit
    def copy(A, a0, a1, B, b0, b1):
        tile(A, a0, a1, B, b0, b1)

    A = np.random.default_rng(8).standard_normal((21, 13))
    A[3, 4], A[5, 6], A[10, 2] = np.nan, -0.0, np.inf
    for kernel in (copy, plain.tile()):
        B = np.zeros((11, 17))
        kernel(A, 3, 2, B, 1, 9)  # A's rows 3..10, columns 2..9 -> B's rows 1..8, columns 9..16
        expected = np.zeros((11, 17))
        expected[1:9, 9:17] = A[3:11, 2:10].T
        assert np.array_equal(B.view(np.int64), expected.view(np.int64))
