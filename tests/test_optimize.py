"""symgraph.optimize and symgraph.integrate against SciPy's own answers (issue 18): the same
optima as SciPy with finite differences or hand-written derivatives, Hock-Schittkowski 71's
published optimum through IPOPT, and Robertson's problem against SciPy's BDF without a
Jacobian. Python backend: no Numba compile in this file."""

from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg

optimize = pytest.importorskip("scipy.optimize")
integrate = pytest.importorskip("scipy.integrate")
from symgraph import integrate as sg_integrate  # noqa: E402
from symgraph import optimize as sg_optimize  # noqa: E402

B = {"backend": "python"}


def _rosenbrock(n: int):
    x = [sg.symbol(f"x{i}") for i in range(n)]
    return sg.apply("add", *[100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
                             for i in range(n - 1)]), x


@pytest.mark.parametrize("method", ["trust-constr", "Newton-CG", "trust-krylov", "trust-exact",
                                    "BFGS", "L-BFGS-B"])
def test_minimize_finds_rosenbrocks_minimum_with_each_methods_derivatives(method):
    f, x = _rosenbrock(6)
    result = sg_optimize.minimize(f, x, np.full(6, -0.5), method=method, tol=1e-10, **B)
    assert isinstance(result, optimize.OptimizeResult)
    np.testing.assert_allclose(result.x, np.ones(6), atol=1e-4)


def test_minimize_passes_keywords_through_and_takes_bounds():
    a, b = sg.symbols("a b")
    result = sg_optimize.minimize((a - 3) ** 2 + (b + 1) ** 2, [a, b], [0.0, 0.0],
                                  method="L-BFGS-B", bounds=[(None, 2.0), (0.0, None)],
                                  options={"maxiter": 50}, **B)
    np.testing.assert_allclose(result.x, [2.0, 0.0], atol=1e-8)


@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
def test_constrained_minimum_matches_scipy_with_hand_written_derivatives(method):
    a, b = sg.symbols("a b")
    cons = [{"type": "ineq", "fun": 1 - a * a - b}, {"type": "eq", "fun": [a - 0.5 * b]}]
    ours = sg_optimize.minimize((a - 1) ** 2 + (b - 2) ** 2, [a, b], [0.1, 0.1], method=method,
                                constraints=cons, tol=1e-12, **B)
    theirs = optimize.minimize(
        lambda p: (p[0] - 1) ** 2 + (p[1] - 2) ** 2, [0.1, 0.1], method="SLSQP", tol=1e-12,
        constraints=[{"type": "ineq", "fun": lambda p: 1 - p[0] ** 2 - p[1]},
                     {"type": "eq", "fun": lambda p: p[0] - 0.5 * p[1]}])
    # trust-constr stops at gtol with its barrier parameter still ~3e-5 (SciPy's own rule)
    np.testing.assert_allclose(ours.x, theirs.x, atol=1e-4 if method == "trust-constr" else 1e-7)


def _hs71():
    x = sg.symbols("x1 x2 x3 x4")
    x1, x2, x3, x4 = x
    return (x1 * x4 * (x1 + x2 + x3) + x3, x,
            [{"type": "ineq", "fun": x1 * x2 * x3 * x4 - 25},
             {"type": "eq", "fun": x1 ** 2 + x2 ** 2 + x3 ** 2 + x4 ** 2 - 40}])


def test_hs71_with_ipopt_reaches_the_published_optimum():
    pytest.importorskip("cyipopt", reason="pip install cyipopt (needs coinor-libipopt-dev)")
    f, x, cons = _hs71()
    result = sg_optimize.minimize(f, x, [1.0, 5.0, 5.0, 1.0], method="ipopt",
                                  constraints=cons, bounds=[(1.0, 5.0)] * 4, **B)
    assert result.success
    assert result.fun == pytest.approx(17.0140173, abs=1e-6)
    np.testing.assert_allclose(result.x, [1.0, 4.74299963, 3.82114998, 1.37940829], atol=1e-6)


def test_hs71_with_slsqp_agrees_with_ipopts_optimum():
    f, x, cons = _hs71()
    result = sg_optimize.minimize(f, x, [1.0, 5.0, 5.0, 1.0], method="SLSQP", constraints=cons,
                                  bounds=[(1.0, 5.0)] * 4, **B)
    assert result.fun == pytest.approx(17.0140173, abs=1e-5)


def test_least_squares_with_sparse_and_dense_jacobians_finds_the_zero_residual_point():
    n = 30
    x = [sg.symbol(f"p{i}") for i in range(n)]
    # Diagonally dominant, zero at x = 1 (and a 3-band Jacobian)
    residuals = [2 * x[i] - x[i + 1] ** 2 / 4 - sg.sin(x[i - 1] - 1) - 1.75 if i else
                 2 * x[0] - x[1] ** 2 / 4 - 1.75 for i in range(n - 1)] + [x[n - 1] - 1]
    start = np.full(n, 0.5)
    tight = {"xtol": 1e-15, "ftol": 1e-15, "gtol": 1e-15}
    sparse = sg_optimize.least_squares(residuals, x, start, sparse=True, **tight, **B)
    dense = sg_optimize.least_squares(residuals, x, start, sparse=False, **tight, **B)
    assert type(sparse.jac).__name__ == "csr_array" and isinstance(dense.jac, np.ndarray)
    for ours in (sparse, dense):  # the residuals vanish at x = 1 only
        np.testing.assert_allclose(ours.x, np.ones(n), atol=1e-8)


def _robertson():
    t, y1, y2, y3, k1, k2, k3 = sg.symbols("t y1 y2 y3 k1 k2 k3")
    rhs = [-k1 * y1 + k3 * y2 * y3, k1 * y1 - k2 * y2 ** 2 - k3 * y2 * y3, k2 * y2 ** 2]
    return rhs, t, [y1, y2, y3], [k1, k2, k3]


def test_robertson_with_bdf_matches_scipys_finite_difference_solution():
    rhs, t, y, k = _robertson()
    args = (0.04, 3e7, 1e4)
    ours = sg_integrate.solve_ivp(rhs, t, y, (0.0, 1e4), [1.0, 0.0, 0.0], method="BDF",
                                  params=k, args=args, rtol=1e-8, atol=1e-12, **B)

    def fun(_t, u, a, b, c):
        return [-a * u[0] + c * u[1] * u[2], a * u[0] - b * u[1] ** 2 - c * u[1] * u[2],
                b * u[1] ** 2]

    theirs = integrate.solve_ivp(fun, (0.0, 1e4), [1.0, 0.0, 0.0], method="BDF", args=args,
                                 rtol=1e-8, atol=1e-12)
    assert ours.success and ours.njev > 0
    np.testing.assert_allclose(ours.y[:, -1], theirs.y[:, -1], rtol=1e-5, atol=1e-12)


def test_reaction_diffusion_gets_a_sparse_jacobian_that_matches_finite_differences():
    n = 60
    u = [sg.symbol(f"u{i}") for i in range(n)]
    d = sg.symbol("d")
    rhs = [d * (u[i - 1] - 2 * u[i] + u[i + 1]) * (n * n) - u[i] ** 2 if 0 < i < n - 1
           else -u[i] for i in range(n)]
    kernels = sg_integrate.OdeKernels(rhs, None, u, [d], **B)
    assert kernels.sparse_pays()
    y0 = np.sin(np.linspace(0, np.pi, n))
    jac = kernels.jac_sparse(0.0, y0, 0.01)
    assert type(jac).__name__ == "csr_array" and jac.nnz == 3 * (n - 2) + 2
    eps = 1e-7
    fd = np.column_stack([(kernels.fun(0.0, y0 + eps * e, 0.01) - kernels.fun(0.0, y0, 0.01))
                          / eps for e in np.eye(n)])
    np.testing.assert_allclose(jac.toarray(), fd, atol=1e-3 * np.abs(fd).max())
    result = sg_integrate.solve_ivp(rhs, None, u, (0.0, 0.1), y0, method="Radau", params=[d],
                                    args=(0.01,), **B)
    assert result.success


def test_bad_constraints_and_starts_name_the_argument():
    a, b = sg.symbols("a b")
    with pytest.raises(ValueError, match=r"constraints\[0\]"):
        sg_optimize.minimize(a * a, [a], [0.0], constraints=[{"type": "le", "fun": a}], **B)
    with pytest.raises(ValueError, match="x0"):
        sg_optimize.minimize(a * a + b, [a, b], [0.0], **B)
