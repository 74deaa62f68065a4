"""Sparse derivatives and SciPy's solvers (issue 18): one run, real figures.

    python -m benchmarks.sparse [--n 10000] [--grid 100] [--states 1000] [--backend numba]

1. Chained Rosenbrock, n variables: time to build the expression, its Hessian pattern, and the
   sparse-Hessian and hessp kernels (built and compiled), then the sparse Hessian's evaluation
   against a hand-written vectorised NumPy one (values in the same order; CSR assembly
   separately), and CasADi's `hessian` + `Function` where CasADi installs.
2. A 2-D Laplacian-type energy on a grid x grid lattice, the same figures.
3. Stiff ODEs with solve_ivp(method="BDF"): Robertson, and a 1-D reaction-diffusion system of
   `states` states, symgraph's sparse Jacobian against SciPy's finite differences (time,
   right-hand-side evaluations, agreement of the solutions).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import symgraph as sg
from symgraph import integrate as sg_integrate


def _clock(function, repeat: int = 1):
    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def _timed_eval(function, minimum: float = 0.2) -> float:
    """Seconds per call: the best of a few runs of enough calls to last `minimum` seconds."""
    function()
    calls, spent = 1, 0.0
    while spent < minimum:
        start = time.perf_counter()
        for _ in range(calls):
            function()
        spent = time.perf_counter() - start
        calls *= 2
    calls //= 2
    return min(_clock(lambda: [function() for _ in range(calls)], 3)[0] / calls, spent / calls)


def _sparse_hessian_report(title: str, build_f, numpy_values, casadi_f, n: int, backend: str
                           ) -> None:
    print(f"\n== {title}: {n} variables ==")
    t_expr, (f, x) = _clock(build_f)
    t_pattern, (rows, cols) = _clock(lambda: sg.hessian_sparsity(f, x))
    print(f"expression {t_expr:.2f} s; Hessian pattern {t_pattern:.2f} s ({len(rows)} nonzeros)")
    start = time.perf_counter()
    fn = sg.compile(f, x, backend=backend)
    kernels = fn.derivative_kernels
    t_value = time.perf_counter() - start
    t_hess, _ = _clock(lambda: kernels.kernel("sparse_hess"))
    t_hessp, _ = _clock(lambda: kernels.kernel("hessp"))
    point = np.random.default_rng(0).uniform(-1, 1, n)
    v = np.random.default_rng(1).uniform(-1, 1, n)
    t_first = _clock(lambda: (kernels.hessian_values(point), fn.hessp(point, v)))[0]
    print(f"value+gradient kernel {t_value:.2f} s; sparse Hessian kernel {t_hess:.2f} s; hessp "
          f"kernel {t_hessp:.2f} s; first calls {t_first:.2f} s (strategy {fn.strategy})")
    print(f"pattern + sparse Hessian + hessp built and compiled: "
          f"{t_pattern + t_hess + t_hessp + t_first:.2f} s")
    ours = kernels.hessian_values(point)
    theirs = numpy_values(point)
    assert np.allclose(ours, theirs, rtol=1e-12, atol=1e-9), "values differ from NumPy's"
    t_ours = _timed_eval(lambda: kernels.hessian_values(point))
    t_numpy = _timed_eval(lambda: numpy_values(point))
    t_csr = _timed_eval(lambda: fn.hessian(point, sparse=True))
    t_hv = _timed_eval(lambda: fn.hessp(point, v))
    print(f"sparse Hessian values: symgraph {t_ours * 1e3:.3f} ms, hand-written NumPy "
          f"{t_numpy * 1e3:.3f} ms ({t_ours / t_numpy:.2f}x); as csr_array {t_csr * 1e3:.3f} ms; "
          f"hessp {t_hv * 1e3:.3f} ms")
    _casadi(casadi_f, n, point, t_ours)


def _casadi(casadi_f, n: int, point, t_ours: float) -> None:
    """CasADi's `hessian` of the same function written with CasADi's own SX vector, wrapped in
    a `Function` (its sparse Hessian), as a CasADi user would."""
    try:
        import casadi as ca
    except ImportError:
        print("CasADi: not installed (pip install casadi) - peer skipped")
        return

    def make():
        x = ca.SX.sym("x", n)
        hessian, _ = ca.hessian(casadi_f(ca, x), x)
        return ca.Function("H", [x], [hessian])

    t_build, function = _clock(make)
    t_eval = _timed_eval(lambda: function(point))
    print(f"CasADi hessian + Function: built {t_build:.2f} s, evaluation {t_eval * 1e3:.3f} ms "
          f"(symgraph {t_eval / t_ours:.2f}x faster)")


# -- problems -------------------------------------------------------------------------------
def rosenbrock(n: int):
    x = [sg.symbol(f"x{i}") for i in range(n)]
    return sg.apply("add", *[100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
                             for i in range(n - 1)]), x


def rosenbrock_numpy_values(p: np.ndarray) -> np.ndarray:
    """The lower triangle row by row: (0,0), (1,0), (1,1), (2,1), (2,2), ..."""
    diag = np.empty_like(p)
    diag[:-1] = 1200 * p[:-1] ** 2 - 400 * p[1:] + 2
    diag[-1] = 0.0
    diag[1:] += 200
    off = -400 * p[:-1]
    out = np.empty(2 * p.size - 1)
    out[0::2] = diag
    out[1::2] = off
    return out


def rosenbrock_casadi(ca, x):
    return ca.sum1(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def grid_casadi(m: int):
    def energy(ca, x):
        u = ca.reshape(x, m, m).T  # row-major, as the symbols are numbered
        down = ca.sum1(ca.sum2((u[1:, :] - u[:-1, :]) ** 2))
        right = ca.sum1(ca.sum2((u[:, 1:] - u[:, :-1]) ** 2))
        return down + right + ca.sum1(x ** 4 / 4 + ca.cos(x))

    return energy


def grid_energy(m: int):
    """sum of squared differences along both axes (the Laplacian) plus u^4/4 + cos(u)."""
    u = [[sg.symbol(f"u{i}_{j}") for j in range(m)] for i in range(m)]
    terms = []
    for i in range(m):
        for j in range(m):
            if i + 1 < m:
                terms.append((u[i + 1][j] - u[i][j]) ** 2)
            if j + 1 < m:
                terms.append((u[i][j + 1] - u[i][j]) ** 2)
            terms.append(u[i][j] ** 4 / 4 + sg.cos(u[i][j]))
    return sg.apply("add", *terms), [s for row in u for s in row]


def grid_numpy_values(m: int):
    n = m * m
    index = np.arange(n).reshape(m, m)
    degree = np.zeros((m, m))
    degree[1:, :] += 2
    degree[:-1, :] += 2
    degree[:, 1:] += 2
    degree[:, :-1] += 2
    # lower-triangle entries row by row: (k, k-m) [up], (k, k-1) [left], (k, k)
    rows = [index.ravel()]
    cols = [index.ravel()]
    rows.append(index[1:, :].ravel())
    cols.append(index[:-1, :].ravel())
    rows.append(index[:, 1:].ravel())
    cols.append(index[:, :-1].ravel())
    r, c = np.concatenate(rows), np.concatenate(cols)
    order = np.lexsort((c, r))
    kind = np.concatenate([np.zeros(n), np.ones(len(r) - n)])[order].astype(bool)
    diag_at = np.flatnonzero(~kind)
    off = np.full(int(kind.sum()), -2.0)

    def values(p: np.ndarray) -> np.ndarray:
        out = np.empty(len(r))
        out[kind] = off
        out[diag_at] = degree.ravel() + 3 * p * p - np.cos(p)
        return out

    return values


def _ode_report(title, rhs, t, y, y0, t_span, params, args, backend: str, **kw) -> None:
    from scipy.integrate import solve_ivp

    print(f"\n== {title}: {len(y)} states, BDF ==")
    t_build, kernels = _clock(lambda: sg_integrate.OdeKernels(rhs, t, y, params,
                                                              backend=backend))
    kernels.jac_sparse(t_span[0], y0, *args)  # compile before timing the solve
    kernels.fun(t_span[0], y0, *args)
    jac = kernels.jac_sparse if kernels.sparse_pays() else kernels.jac_dense
    t_ours, ours = _clock(lambda: solve_ivp(kernels.fun, t_span, y0, method="BDF", args=args,
                                            jac=jac, **kw))
    calls = {"n": 0}

    def counted(tt, yy, *a):
        calls["n"] += 1
        return kernels.fun(tt, yy, *a)

    t_fd, theirs = _clock(lambda: solve_ivp(counted, t_span, y0, method="BDF", args=args, **kw))
    error = np.abs(ours.y[:, -1] - theirs.y[:, -1]).max() / np.abs(theirs.y[:, -1]).max()
    print(f"kernels built in {t_build:.2f} s; Jacobian {len(kernels.pattern[0])} nonzeros, "
          f"{'sparse' if kernels.sparse_pays() else 'dense'}")
    print(f"symgraph Jacobian: {t_ours:.3f} s, {ours.nfev} rhs, {ours.njev} Jacobians; SciPy "
          f"finite differences: {t_fd:.3f} s, {calls['n']} rhs calls ({theirs.nfev} counted "
          f"by SciPy); final states agree to {error:.1e} (relative)")


def robertson():
    t, y1, y2, y3, k1, k2, k3 = sg.symbols("t y1 y2 y3 k1 k2 k3")
    rhs = [-k1 * y1 + k3 * y2 * y3, k1 * y1 - k2 * y2**2 - k3 * y2 * y3, k2 * y2**2]
    return rhs, t, [y1, y2, y3], [k1, k2, k3]


def reaction_diffusion(n: int):
    """u_t = d u_xx + u^2 (1 - u) on n points, zero-flux ends (Fisher-KPP-like)."""
    u = [sg.symbol(f"u{i}") for i in range(n)]
    d = sg.symbol("d")
    h2 = float((n - 1) ** 2)
    rhs = []
    for i in range(n):
        left, right = u[max(i - 1, 0) if i else 1], u[i + 1 if i + 1 < n else n - 2]
        rhs.append(d * h2 * (left - 2 * u[i] + right) + u[i] ** 2 * (1 - u[i]))
    return rhs, u, d


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--grid", type=int, default=100)
    parser.add_argument("--states", type=int, default=1000)
    parser.add_argument("--backend", default="numba")
    parser.add_argument("--parts", default="rosenbrock,grid,ode",
                        help="comma-separated: rosenbrock, grid, ode")
    a = parser.parse_args()
    parts = set(a.parts.split(","))
    if "rosenbrock" in parts:
            _sparse_hessian_report("Chained Rosenbrock", lambda: rosenbrock(a.n),
                               rosenbrock_numpy_values, rosenbrock_casadi, a.n, a.backend)
    if "grid" in parts:
        _sparse_hessian_report(f"2-D Laplacian-type energy {a.grid}x{a.grid}",
                               lambda: grid_energy(a.grid), grid_numpy_values(a.grid),
                               grid_casadi(a.grid), a.grid * a.grid, a.backend)
    if "ode" not in parts:
        return
    rhs, t, y, k = robertson()
    _ode_report("Robertson", rhs, t, y, np.array([1.0, 0.0, 0.0]), (0.0, 1e5), k,
                (0.04, 3e7, 1e4), a.backend, rtol=1e-6, atol=1e-10)
    rhs, u, d = reaction_diffusion(a.states)
    x = np.linspace(0, 1, a.states)
    _ode_report("1-D reaction-diffusion", rhs, None, u, np.exp(-100 * (x - 0.5) ** 2),
                (0.0, 1.0), [d], (1e-2,), a.backend, rtol=1e-6, atol=1e-9)


if __name__ == "__main__":
    main()
