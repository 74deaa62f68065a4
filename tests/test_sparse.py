"""Sparsity patterns, sparse derivative kernels and derivative products (issue 18).

Oracles: the dense symbolic derivatives (`sg.jacobian`, `sg.hessian`) for the patterns, the
dense kernels for the sparse values and products (every backend and the tape), and SciPy's own
Rosenbrock functions (`rosen_der`, `rosen_hess`, `rosen_hess_prod`).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symgraph as sg
from symgraph.ad.compressed import color_columns, nonzero_pattern, sparse_hessian
from symgraph.ir.traversal import topological_order
from tests.strategies import expressions

scipy_optimize = pytest.importorskip("scipy.optimize")
VARS = ("x", "y", "z", "w")


def _rosenbrock(n: int):
    x = [sg.symbol(f"x{i}") for i in range(n)]
    terms = [100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(n - 1)]
    return sg.apply("add", *terms), x


def _pairs(rows, cols):
    return list(zip(np.asarray(rows).tolist(), np.asarray(cols).tolist()))


def _symbols(node) -> set:
    return {n for n in topological_order([node]) if n.op == "symbol"}


def _zero_factor(outputs) -> bool:
    """Whether a product has a constant 0 factor (kept: 0 * inf is nan), a pow_prev has a p of
    its own, or a select's branches (where's, max's, min's) read different variables. A
    derivative through the first is 0 * (the adjoint), which folds to 0 only when the
    adjoint is a constant; the second's (y, p) second partial is zero on each side of its
    piecewise definition, which sg.hessian may fold; so is the third's mixed partial across
    its branches (on each side one branch's variables are constants: acos(g(where(x < c, x,
    y))) has no x-y term, and sg.hessian folds where(c, 1, 0) * where(c, 0, 1)), while the
    pattern takes the union of both sides. There the symbolic derivative's structural zeros
    depend on folding and the pattern may hold more (never fewer) entries."""
    return any((node.op == "mul" and any(a.op == "const" and a.value == 0.0 for a in node.args))
               or (node.op == "pow_prev" and node.args[2] is not node.args[0] ** node.args[1])
               or (node.op == "where" and _symbols(node.args[1]) != _symbols(node.args[2]))
               or (node.op in ("max", "min")  # selects too: max(x, g(y)) is x or g(y)
                   and len({frozenset(_symbols(a)) for a in node.args}) > 1)
               for node in topological_order(list(outputs)))


def _assert_pattern_is(found, dense, outputs):
    found, dense = _pairs(*found), _pairs(*dense)
    if _zero_factor(outputs):
        assert set(dense) <= set(found)
    else:
        assert found == dense


# -- patterns ------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(expressions(variables=VARS, max_depth=4))
def test_hessian_pattern_is_the_nonzero_pattern_of_the_symbolic_hessian(f):
    wrt = [sg.symbol(v) for v in VARS]
    dense = nonzero_pattern(sg.hessian(f, wrt), lower=True)
    _assert_pattern_is(sg.hessian_sparsity(f, wrt), dense, [f])


@settings(max_examples=40, deadline=None)
@given(st.lists(expressions(variables=VARS, max_depth=3), min_size=1, max_size=4))
def test_jacobian_pattern_is_the_nonzero_pattern_of_the_symbolic_jacobian(outputs):
    wrt = [sg.symbol(v) for v in VARS]
    dense = nonzero_pattern(sg.jacobian(outputs, wrt))
    _assert_pattern_is(sg.jacobian_sparsity(outputs, wrt), dense, outputs)


def test_patterns_through_a_constant_zero_factor_cover_the_symbolic_derivatives():
    x, y = sg.symbols("x y")
    for f in (0 * x * x, sg.sin(0 * x) + x * y, 0 * x * y):
        dense = nonzero_pattern(sg.hessian(f, [x, y]), lower=True)
        assert set(_pairs(*dense)) <= set(_pairs(*sg.hessian_sparsity(f, [x, y])))
        dense = nonzero_pattern(sg.jacobian([f], [x, y]))
        assert set(_pairs(*dense)) <= set(_pairs(*sg.jacobian_sparsity([f], [x, y])))


def test_patterns_are_sorted_int_arrays_and_hessians_lower_triangles():
    f, x = _rosenbrock(6)
    rows, cols = sg.hessian_sparsity(f, x)
    assert rows.dtype == np.int64 and cols.dtype == np.int64
    assert np.all(rows >= cols)
    assert _pairs(rows, cols) == sorted(_pairs(rows, cols))
    assert len(rows) == 2 * 6 - 1  # tridiagonal: diagonal and one band


def test_affine_outputs_are_detected_per_output():
    x, y, z = sg.symbols("x y z")
    flags = sg.affine_outputs([3 * x - y / 2 + 1, x * y, sg.floor(x * y) + z, sg.sin(z),
                               sg.where(x > 0, y, 2 * z)], [x, y, z])
    assert flags.tolist() == [True, False, True, False, True]


def test_a_wide_sum_of_local_terms_gets_its_pattern_in_linear_time():
    f, x = _rosenbrock(3000)
    rows, cols = sg.hessian_sparsity(f, x)
    assert len(rows) == 2 * 3000 - 1
    assert _pairs(*sg.jacobian_sparsity([f], x)) == [(0, j) for j in range(3000)]


def test_coloring_gives_rows_distinct_colors_and_few_of_them():
    f, x = _rosenbrock(50)
    rows, cols = sg.hessian_sparsity(f, x)
    full_r = np.concatenate([rows, cols[rows != cols]])
    full_c = np.concatenate([cols, rows[rows != cols]])
    color = color_columns(full_r, full_c, 50)
    assert color.max() + 1 == 3
    for r in range(50):
        in_row = color[full_c[full_r == r]]
        assert len(set(in_row.tolist())) == len(in_row)


def test_compressed_hessian_entries_are_the_dense_hessians_entries():
    x, y, z = sg.symbols("x y z")
    f = sg.exp(x * y) + sg.sin(z) * y + x ** 3
    rows, cols, entries = sparse_hessian(f, [x, y, z])
    dense = sg.hessian(f, [x, y, z])
    at = {"x": 0.3, "y": -0.7, "z": 1.1}
    for i, j, e in zip(rows.tolist(), cols.tolist(), entries):
        assert sg.evaluate(e, at) == pytest.approx(sg.evaluate(dense[i][j], at), rel=1e-13)


# -- sparse kernels against dense kernels: every backend and the tape ----------------------
CONFIGS = [("python", "straight"), ("numba", "straight"), ("numba", "tape")]


def _scalar_problem():
    x = [sg.symbol(f"u{i}") for i in range(12)]
    f = sum((x[i + 1] - x[i] ** 2) ** 2 + sg.exp(0.1 * x[i]) * x[(i + 5) % 12] for i in range(11))
    return f + sg.log(1 + x[0] ** 2) * x[11], x


def _vector_problem():
    x = [sg.symbol(f"u{i}") for i in range(12)]
    return [x[i] * x[i + 1] - sg.sin(x[i - 1]) for i in range(11)] + [x[0] + 2 * x[5]], x


_FUNCTIONS: dict = {}


def _compiled(backend: str, strategy: str):
    key = (backend, strategy)
    if key not in _FUNCTIONS:  # shared by the tests: one compile per configuration
        f, x = _scalar_problem()
        g, _ = _vector_problem()
        _FUNCTIONS[key] = (sg.compile(f, x, backend=backend, strategy=strategy),
                           sg.compile(g, x, backend=backend, strategy=strategy))
    return _FUNCTIONS[key]


@pytest.mark.parametrize("backend,strategy", CONFIGS)
def test_sparse_values_equal_the_dense_kernels_at_random_points(backend, strategy):
    fn, gn = _compiled(backend, strategy)
    rng = np.random.default_rng(7)
    for _ in range(3):
        p = rng.uniform(-1, 1, 12)
        hs = fn.hessian(p, sparse=True)
        assert type(hs).__name__ == "csr_array"
        np.testing.assert_allclose(hs.toarray(), fn.hessian(p), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gn.jacobian(p, sparse=True).toarray(), gn.jacobian(p),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend,strategy", CONFIGS)
def test_products_equal_dense_derivatives_times_vectors_per_point_and_batch(backend, strategy):
    fn, gn = _compiled(backend, strategy)
    rng = np.random.default_rng(3)
    p, v, w = rng.uniform(-1, 1, 12), rng.uniform(-1, 1, 12), rng.uniform(-1, 1, 12)
    np.testing.assert_allclose(fn.hessp(p, v), fn.hessian(p) @ v, rtol=1e-11, atol=1e-12)
    J = gn.jacobian(p)
    np.testing.assert_allclose(gn.jvp(p, v), J @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gn.vjp(p, w), w @ J, rtol=1e-12, atol=1e-12)
    P, V = rng.uniform(-1, 1, (5, 12)), rng.uniform(-1, 1, (5, 12))
    expected = np.einsum("bij,bj->bi", fn.hessian(P), V)
    np.testing.assert_allclose(fn.hessp(P, V), expected, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(gn.jvp(P, V), np.einsum("bij,bj->bi", gn.jacobian(P), V),
                               rtol=1e-12, atol=1e-12)


def test_lagrangian_hessian_is_sigma_hf_plus_lambda_hg_lower_triangle():
    from symgraph.backends.registry import backend_named
    from symgraph.runtime.sparse import Lagrangian

    x, y, z = sg.symbols("x y z")
    f, g1, g2 = x * y * z + z ** 2, x ** 2 + y ** 2, sg.exp(x) * z + y
    lag = Lagrangian(f, [g1, g2], [x, y, z], backend=backend_named("python"))
    p, sigma, lam = np.array([0.4, -0.3, 0.9]), 2.0, np.array([0.5, -1.5])
    dense = np.zeros((3, 3))
    for scale, e in ((sigma, f), (lam[0], g1), (lam[1], g2)):
        dense += scale * sg.compile(e, [x, y, z], backend="python").hessian(p)
    rows, cols = lag.pattern
    np.testing.assert_allclose(lag(p, sigma, lam), dense[rows, cols], rtol=1e-13)


# -- SciPy's Rosenbrock ---------------------------------------------------------------------
@pytest.mark.parametrize("n", [10, 1000])
def test_rosenbrock_agrees_with_scipys_reference_functions(n):
    f, x = _rosenbrock(n)
    fn = sg.compile(f, x, backend="python")
    rng = np.random.default_rng(n)
    p, v = rng.uniform(-1.5, 1.5, n), rng.uniform(-1, 1, n)
    value, gradient = fn.value_and_grad(p)
    assert value == pytest.approx(scipy_optimize.rosen(p), rel=1e-13)
    np.testing.assert_allclose(gradient, scipy_optimize.rosen_der(p), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(fn.hessian(p, sparse=True).toarray(),
                               scipy_optimize.rosen_hess(p), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(fn.hessp(p, v), scipy_optimize.rosen_hess_prod(p, v),
                               rtol=1e-12, atol=1e-9)


@pytest.mark.slow  # ~10 s: the expression's 400,000 nodes, then the fused sum kernels
def test_rosenbrock_gradient_hessp_and_sparse_hessian_at_a_hundred_thousand_variables():
    n = 100_000
    f, x = _rosenbrock(n)
    fn = sg.compile(f, x)  # value and gradient: the fused sum kernels
    p, v = np.random.default_rng(1).uniform(-1.5, 1.5, (2, n))
    value, gradient = fn.value_and_grad(p)
    assert value == pytest.approx(scipy_optimize.rosen(p), rel=1e-12)
    np.testing.assert_allclose(gradient, scipy_optimize.rosen_der(p), rtol=1e-12, atol=1e-8)
    expected = scipy_optimize.rosen_hess_prod(p, v)
    np.testing.assert_allclose(fn.hessp(p, v), expected, rtol=1e-12, atol=1e-8)
    np.testing.assert_allclose(fn.hessian(p, sparse=True) @ v, expected, rtol=1e-12, atol=1e-8)


# -- sums of small terms (runtime.separable) ------------------------------------------------
def _grid(m: int):
    u = [[sg.symbol(f"u{i}_{j}") for j in range(m)] for i in range(m)]
    terms = [(u[i + 1][j] - u[i][j]) ** 2 for i in range(m - 1) for j in range(m)]
    terms += [(u[i][j + 1] - u[i][j]) ** 2 for i in range(m) for j in range(m - 1)]
    terms += [u[i][j] ** 4 / 4 + sg.cos(u[i][j]) for i in range(m) for j in range(m)]
    return sg.apply("add", *terms), [s for row in u for s in row]


def _chain(n: int):
    """Not tuned on: three-variable terms with exp, log and sin, and a constant term."""
    x = [sg.symbol(f"c{i}") for i in range(n)]
    terms = [sg.log(1 + (x[i + 1] - x[i]) ** 2) + 0.5 * sg.exp(-x[i] * x[i + 2])
             * sg.sin(x[i + 1]) for i in range(n - 2)]
    return sg.apply("add", 3.0, *terms), x


@pytest.mark.parametrize("family", [_rosenbrock, _grid, _chain])
def test_separable_numba_kernels_give_the_symbolic_pattern_value_gradient_hessian_and_hessp(
        family):
    from symgraph.backends.registry import BACKENDS
    from symgraph.runtime import separable

    f, x = family(6 if family is _grid else 30)
    fn = sg.compile(f, x, backend="python")
    found = separable.separable_sum(f, x, x, backend=BACKENDS["numba"], min_terms=2)
    assert found is not None
    assert len(found.kinds) >= 2  # a chain's ends, a grid's edges: loops of their own
    rows, cols = sg.hessian_sparsity(f, x)
    assert _pairs(*found.pattern) == _pairs(rows, cols)
    rng = np.random.default_rng(3)
    for _ in range(3):
        p, v = rng.uniform(-1.5, 1.5, (2, len(x)))
        value, gradient = fn.value_and_grad(p)
        assert found.value(p) == pytest.approx(value, rel=1e-13)
        fused_value, fused_gradient = found.value_and_grad(p)
        assert fused_value == pytest.approx(value, rel=1e-13)
        np.testing.assert_allclose(fused_gradient, gradient, rtol=1e-13, atol=1e-13)
        dense = fn.hessian(p)
        np.testing.assert_allclose(found.hessian_values(p), dense[rows, cols], rtol=1e-13,
                                   atol=1e-13)
        np.testing.assert_allclose(found.hessp(p, v), dense @ v, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="point of"):  # the kernels index unchecked
        found.hessian_values(p[:-1])
    with pytest.raises(ValueError, match="vector"):
        found.hessp(p, v[:-1])


@pytest.mark.parametrize("family", [_rosenbrock, _chain])
def test_numba_compile_of_a_sum_of_small_terms_runs_the_fused_kernels_as_the_dense_ones(
        family, monkeypatch):
    from symgraph.runtime import separable
    from symgraph.runtime.separable_build import SeparableBuild

    monkeypatch.setattr(separable, "MIN_TERMS", 2)  # the rule at 10^3 terms, on 20
    f, x = family(20)
    fn = sg.compile(f, x)
    assert isinstance(fn._built, SeparableBuild) and "fused" in repr(fn)
    dense = sg.compile(f, x, backend="python")
    rng = np.random.default_rng(5)
    p, points = rng.uniform(-1.5, 1.5, len(x)), rng.uniform(-1.5, 1.5, (3, len(x)))
    value, gradient = fn.value_and_grad(p)
    assert value == pytest.approx(dense(p), rel=1e-13) and fn(p) == pytest.approx(value)
    np.testing.assert_allclose(gradient, dense.grad(p), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(fn.grad(*p), gradient, rtol=1e-15)  # floats, one by one
    out = np.empty(len(x))
    assert fn.value_and_grad(p, out=out) == value and np.array_equal(out, gradient)
    values, gradients = fn.value_and_grad(points)  # a batch: a point at a time
    np.testing.assert_allclose(values, dense(points), rtol=1e-13)
    np.testing.assert_allclose(gradients, dense.grad(points), rtol=1e-13, atol=1e-13)
    hessians = dense.hessian(points)  # sparse Hessians and H v of a batch: fused, per point
    rows, cols = sg.hessian_sparsity(f, x)
    fused = fn.derivative_kernels
    np.testing.assert_allclose(fused.hessian_values(points), hessians[:, rows, cols],
                               rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(fn.hessp(points, p), hessians @ p, rtol=1e-12, atol=1e-12)
    if family is _rosenbrock:
        assert value == pytest.approx(scipy_optimize.rosen(p), rel=1e-13)
        np.testing.assert_allclose(gradient, scipy_optimize.rosen_der(p), rtol=1e-12,
                                   atol=1e-9)
    with pytest.raises(ValueError, match="value"):
        fn.value_and_grad(p[:-1])
    assert fn.op_counts()["value_grad"] > 0  # the symbolic programs, made when asked for


def test_separable_numba_kernels_refuse_parameters_big_terms_and_few_terms():
    from symgraph.backends.registry import BACKENDS
    from symgraph.runtime.separable import separable_sum

    numba_backend = BACKENDS["numba"]
    f, x = _rosenbrock(8)
    assert separable_sum(f, x, x, backend=numba_backend) is None  # fewer than MIN_TERMS
    a = sg.symbol("a")
    g = sg.apply("add", *[a * xi ** 2 for xi in x])  # a parameter inside every term
    assert separable_sum(g, [*x, a], x, backend=numba_backend, min_terms=2) is None
    wide = sg.apply("add", sg.apply("mul", *x) ** 2, x[0] ** 3)  # 8 variables: kept
    assert separable_sum(wide, x, x, backend=numba_backend, min_terms=2) is not None
    y = [sg.symbol(f"y{i}") for i in range(9)]  # one term over 9 variables: too wide
    assert separable_sum(sg.apply("add", sg.apply("mul", *y) ** 2, y[0] ** 3), y, y,
                         backend=numba_backend, min_terms=2) is None


@pytest.mark.parametrize("family", [_rosenbrock, _grid, _chain])
def test_a_sum_of_small_terms_gets_the_dags_hessian_pattern_from_its_terms_shapes(family,
                                                                                 monkeypatch):
    from symgraph.ad import sparsity, terms

    f, x = family(7 if family is _grid else 40)
    dag = sparsity._dag_pattern(f, x)
    monkeypatch.setattr(sparsity, "SUM_MIN_TERMS", 2)
    sparsity._LAST_HESSIAN[:] = [None, None]
    assert terms.sum_hessian_pattern(f, x, 2, sparsity._dag_pattern) is not None
    rows, cols = sg.hessian_sparsity(f, x)
    assert _pairs(rows, cols) == _pairs(*dag) and rows.dtype == cols.dtype == np.int64
    a = sg.symbol("a")  # a parameter inside the terms: the DAG's pass
    g = f + a * x[0] * x[1]
    assert terms.sum_hessian_pattern(g, x, 2, sparsity._dag_pattern) is None
    assert _pairs(*sg.hessian_sparsity(g, x)) == _pairs(*sparsity._dag_pattern(g, x))


# -- raw kernels, from users' own @njit code -----------------------------------------------
def test_raw_kernels_are_callable_from_user_numba_code():
    from numba import njit

    f, x = _rosenbrock(8)
    fn = sg.compile(f, x, strategy="straight")
    checked, _ = fn.kernels("hessp")  # the point is [x, v]; out is [value, gradient, H v]
    row = checked.unchecked  # the Numba dispatcher itself (the checked wrapper is Python)

    @njit
    def newton_cg_direction_norm(point, steps):
        out = np.empty(1 + 2 * 8)
        xv = np.empty(16)
        xv[:8] = point
        xv[8:] = 1.0
        total = 0.0
        for _ in range(steps):
            row(xv, out)
            total += np.sum(out[9:] ** 2)
        return total

    p = np.linspace(-1, 1, 8)
    hv = scipy_optimize.rosen_hess_prod(p, np.ones(8))
    assert newton_cg_direction_norm(p, 3) == pytest.approx(3 * np.sum(hv ** 2), rel=1e-12)
    value_grad = fn.kernels("value_grad")[0].unchecked

    @njit
    def gradient_descent(point, rate, steps):
        out = np.empty(9)
        for _ in range(steps):
            value_grad(point, out)
            point = point - rate * out[1:]
        return point

    assert scipy_optimize.rosen(gradient_descent(p.copy(), 1e-4, 50)) < scipy_optimize.rosen(p)


def test_importing_symgraph_does_not_import_scipy():
    code = "import sys, symgraph; assert 'scipy' not in sys.modules, 'scipy imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_reserved_vector_names_are_refused_clearly():
    v = sg.symbol("_hessp_v[0]")
    fn = sg.compile(v ** 2, [v], backend="python")
    with pytest.raises(ValueError, match="reserved"):
        fn.hessp(np.ones(1), np.ones(1))


def test_product_batches_pair_points_with_vectors_and_refuse_unpaired_counts():
    a, b = sg.symbols("a b")
    fn = sg.compile(sg.sin(a * b) + a**3, [a, b], backend="python")
    points, vectors = np.array([[0.5, 1.5], [1.0, -2.0], [2.0, 0.25]]), np.array([[1.0, -1.0]])
    one = [fn.jvp(p, vectors[0]) for p in points]
    np.testing.assert_array_equal(fn.jvp(points, vectors), np.array(one))  # one vector, 3 points
    np.testing.assert_array_equal(fn.vjp(points[:1], np.ones((3, 1))),
                                  np.array([fn.vjp(points[0], np.ones(1))] * 3))
    assert fn.jvp(np.empty((0, 2)), vectors[0]).shape == (0, 1)  # no points: no rows
    with pytest.raises(ValueError, match="3 point.s. and 2 vector.s. do not pair up"):
        fn.jvp(points, np.ones((2, 2)))
