"""Sparse derivatives and SciPy's solvers (issue 18): one run, real figures.

    python -m benchmarks.sparse [--n 10000,100000] [--grid 300] [--chain 100000] [--states 1000]

1. Chained Rosenbrock, n variables (10^4 and 10^5): time to build the expression and
   `sg.hessian_sparsity`; then, from nothing (a fresh cache folder per problem, so every
   kernel is compiled), the pattern, sparse-Hessian and hessp kernels built and compiled
   (runtime.separable: the terms' shapes, one generated module of fused loops per kind of
   term, backends.numba.sums) and `sg.compile`'s own value+gradient (the same fused kernels);
   the value+gradient against SciPy's rosen + rosen_der, the sparse Hessian's evaluation
   against a hand-written vectorised NumPy one (values in the same order; CSR assembly
   separately), the symbolic sparse kernels up to --symbolic-max variables, CasADi's
   `hessian` + `Function` where CasADi installs, asdex's jitted sparse Hessian (JAX) where
   asdex installs (pip install asdex), and at the largest n
   `sg.optimize.minimize(method="trust-constr")` end to end. The run has one OpenBLAS thread.
2. A 2-D Laplacian-type energy on a grid x grid lattice, the same figures.
3. A chain of log/exp/sin terms over three variables, a family nothing was tuned on: the
   same figures but NumPy's.
4. Stiff ODEs with solve_ivp(method="BDF"): Robertson, and a 1-D reaction-diffusion system of
   `states` states, symgraph's sparse Jacobian against SciPy's finite differences (time,
   right-hand-side evaluations, agreement of the solutions).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time

import numpy as np

import symgraph as sg
from symgraph import integrate as sg_integrate
from symgraph.ad import sparsity
from symgraph.backends.registry import BACKENDS
from symgraph.runtime import separable
from symgraph.runtime.sparse import DerivativeKernels


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


def _ratios(ours, theirs, repeats: int = 3) -> tuple[float, float, float]:
    """(our seconds, worst ratio, best ratio) over `repeats` paired measurements."""
    pairs = [(_timed_eval(ours), _timed_eval(theirs)) for _ in range(repeats)]
    ratios = [a / b for a, b in pairs]
    return max(a for a, _ in pairs), max(ratios), min(ratios)


def _sparse_hessian_report(title: str, build_f, numpy_values, casadi_f, asdex_f, n: int,
                           backend: str, symbolic_max: int, value_kernel: bool = True,
                           gradient=None) -> None:
    """Setup and evaluation figures of one sparse Hessian problem. The kernels a user gets
    from `fn.hessian(x, sparse=True)` and `fn.hessp`: for a large sum of small terms, one
    template kernel per kind of term (runtime.separable); the symbolic sparse kernels (the
    whole Hessian differentiated and scheduled, on the tape past 4,000 operations) are
    measured too up to `symbolic_max` variables."""
    print(f"\n== {title}: {n} variables ==")
    t_expr, (f, x) = _clock(build_f)
    t_pattern, (rows, cols) = _clock(lambda: sg.hessian_sparsity(f, x))
    print(f"expression {t_expr:.2f} s; sg.hessian_sparsity {t_pattern:.2f} s "
          f"({len(rows)} nonzeros)")
    point = np.random.default_rng(0).uniform(-1, 1, n)
    v = np.random.default_rng(1).uniform(-1, 1, n)
    # The figure, from nothing: the sparse kernels alone, as
    # sg.compile(...).derivative_kernels makes them (the templates, then the first calls).
    # A fresh cache folder per problem: its generated files are new, so Numba compiles them
    # (the same formulas at another size would otherwise load the machine code kept before).
    cold = tempfile.mkdtemp(prefix="symgraph-sparse-bench-")
    separable._LAST[:] = [None, None]
    kernels = DerivativeKernels([f], x, x, backend=BACKENDS[backend], cache_dir=cold)
    cpu = time.process_time()
    t_sep, found = _clock(lambda: kernels.separable)
    t_first = _clock(lambda: (kernels.hessian_pattern(), kernels.hessian_values(point),
                              kernels.hessp(point, v)))[0]
    cpu = time.process_time() - cpu  # this process's share of the shared cores
    kinds = "none" if found is None else ", ".join(
        f"{len(k.index)} x {k.k}" for k in found.kinds)
    print(f"sums of small terms: kinds (terms x variables) {kinds}")
    print(f"pattern + sparse Hessian + hessp built and compiled: {t_sep + t_first:.2f} s "
          f"(templates {t_sep:.2f} s, first calls {t_first:.2f} s; CPU time {cpu:.2f} s, "
          f"load {os.getloadavg()[0]:.1f})")
    if value_kernel:  # sg.compile's own value+gradient, from nothing too (templates again)
        separable._LAST[:] = [None, None]
        t_value, fn = _clock(lambda: sg.compile(f, x, backend=backend, cache_dir=cold))
        t_vg = _clock(lambda: fn.value_and_grad(point))[0]
        fused = fn.derivative_kernels.separable is not None
        print(f"sg.compile value+gradient: {t_value + t_vg:.2f} s to the first gradient "
              f"(compile {t_value:.2f} s, first call {t_vg:.2f} s; "
              f"{'fused sum kernels' if fused else 'strategy ' + fn.strategy})")
        kernels = fn.derivative_kernels
        if gradient is not None:
            value, g = fn.value_and_grad(point)
            ref_value, ref_g = gradient(point)
            assert np.isclose(value, ref_value, rtol=1e-12)
            assert np.allclose(g, ref_g, rtol=1e-12, atol=1e-9), "gradient differs"
            t_ours, worst, best = _ratios(lambda: fn.value_and_grad(point),
                                          lambda: gradient(point))
            print(f"value+gradient: symgraph {t_ours * 1e3:.3f} ms, {best:.2f}x-{worst:.2f}x "
                  "SciPy/NumPy (rosen + rosen_der; 3 paired runs, best-worst)")
        else:
            print(f"value+gradient: symgraph "
                  f"{_timed_eval(lambda: fn.value_and_grad(point)) * 1e3:.3f} ms")
    pattern = kernels.hessian_pattern()
    assert np.array_equal(pattern[0], rows) and np.array_equal(pattern[1], cols)
    ours = kernels.hessian_values(point)
    if numpy_values is not None:
        assert np.allclose(ours, numpy_values(point), rtol=1e-12, atol=1e-9), "NumPy differs"
        t_ours, worst, best = _ratios(lambda: kernels.hessian_values(point),
                                      lambda: numpy_values(point))
        print(f"sparse Hessian values: symgraph {t_ours * 1e3:.3f} ms, {best:.2f}x-{worst:.2f}x "
              f"hand-written NumPy (3 paired runs, best-worst)")
    else:
        t_ours = _timed_eval(lambda: kernels.hessian_values(point))
        print(f"sparse Hessian values: symgraph {t_ours * 1e3:.3f} ms (no NumPy by hand)")
    t_csr = _timed_eval(lambda: kernels.hessian(point))
    t_hv = _timed_eval(lambda: kernels.hessp(point, v))
    print(f"as csr_array {t_csr * 1e3:.3f} ms; hessp {t_hv * 1e3:.3f} ms")
    if n <= symbolic_max:
        t_hess, _ = _clock(lambda: kernels.kernel("sparse_hess"))
        t_hessp, _ = _clock(lambda: kernels.kernel("hessp"))
        symbolic = kernels.kernel("sparse_hess")(point)
        agree = np.abs(symbolic - ours).max() / max(1.0, np.abs(symbolic).max())
        t_sym = _timed_eval(lambda: kernels.kernel("sparse_hess")(point))
        print(f"symbolic sparse kernels: Hessian built in {t_hess:.2f} s, hessp {t_hessp:.2f} s; "
              f"evaluation {t_sym * 1e3:.3f} ms ({t_sym / t_ours:.2f}x the template path's); "
              f"values agree to {agree:.1e}")
    _casadi(casadi_f, n, point, t_ours)
    _asdex(asdex_f, n, point, t_ours, kernels.hessian(point))
    # The problem's graph let go before the next one (the kept last sum and pattern hold it)
    separable._LAST[:] = [None, None]
    sparsity._LAST_HESSIAN[:] = [None, None]
    gc.collect()


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


def _asdex(asdex_f, n: int, point, t_ours: float, reference) -> None:
    """asdex's sparse Hessian (JAX) of the same function written in jax.numpy, as an asdex user
    would: pattern and coloring detected once, the evaluation jitted (float64). Its values
    (a BCOO matrix, full symmetric) are checked against symgraph's csr_array."""
    try:
        import asdex
        import jax
    except ImportError:
        print("asdex: not installed (pip install asdex) - peer skipped")
        return
    from importlib.metadata import version

    from scipy.sparse import coo_array

    jax.config.update("jax_enable_x64", True)
    x = jax.numpy.asarray(point)

    def f(y):
        return asdex_f(jax.numpy, y)

    def make():  # pattern + coloring, then the jitted Hessian compiled by its first call
        coloring = asdex.hessian_coloring(f, x)
        hessian = jax.jit(asdex.hessian_from_coloring(f, coloring))
        hessian(x).data.block_until_ready()
        return coloring, hessian

    t_build, (coloring, hessian) = _clock(make)
    t_eval = _timed_eval(lambda: hessian(x).data.block_until_ready())
    h = hessian(x)
    theirs = coo_array((np.asarray(h.data), tuple(np.asarray(h.indices).T)), shape=(n, n))
    error = abs(theirs.tocsr() - reference)
    assert (error - 1e-10 * abs(reference)).max() <= 1e-9, "asdex's Hessian differs"
    print(f"asdex {version('asdex')} (JAX {jax.__version__}) sparse Hessian: built "
          f"{t_build:.2f} s ({coloring.num_colors} colors), "
          f"evaluation {t_eval * 1e3:.3f} ms (symgraph {t_eval / t_ours:.2f}x faster); "
          f"values agree (max difference {error.max():.1e})")


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


def rosen_value_grad(p: np.ndarray):
    from scipy.optimize import rosen, rosen_der

    return rosen(p), rosen_der(p)


def _minimize_report(n: int, backend: str) -> None:
    """sg.optimize.minimize(method="trust-constr") end to end: expression to solution, from
    nothing (no sum kept from before, a fresh cache folder: every kernel compiled)."""
    separable._LAST[:] = [None, None]
    os.environ["SYMGRAPH_CACHE_DIR"] = tempfile.mkdtemp(prefix="symgraph-sparse-bench-")
    start = time.perf_counter()
    f, x = rosenbrock(n)
    t_expr = time.perf_counter() - start
    x0 = np.full(n, 0.5)
    result = sg.optimize.minimize(f, x, x0, method="trust-constr", backend=backend,
                                  options={"gtol": 1e-8, "maxiter": 200})
    total = time.perf_counter() - start
    error = np.abs(result.x - 1.0).max()
    print(f"minimize(method='trust-constr'), {n} variables from 0.5: {total:.2f} s in all "
          f"(expression {t_expr:.2f} s, compile and solve {total - t_expr:.2f} s), "
          f"{result.nit} iterations, {result.nfev} values, {result.njev} gradients, "
          f"{result.nhev} Hessians; max |x - 1| = {error:.1e} ({result.message})")


def rosenbrock_casadi(ca, x):
    return ca.sum1(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def grid_casadi(m: int):
    def energy(ca, x):
        u = ca.reshape(x, m, m).T  # row-major, as the symbols are numbered
        down = ca.sum1(ca.sum2((u[1:, :] - u[:-1, :]) ** 2))
        right = ca.sum1(ca.sum2((u[:, 1:] - u[:, :-1]) ** 2))
        return down + right + ca.sum1(x ** 4 / 4 + ca.cos(x))

    return energy


def chain(n: int):
    """A family not tuned on (validation): three-variable terms with log, exp and sin."""
    x = [sg.symbol(f"c{i}") for i in range(n)]
    return sg.apply("add", *[sg.log(1 + (x[i + 1] - x[i]) ** 2)
                             + 0.5 * sg.exp(-x[i] * x[i + 2]) * sg.sin(x[i + 1])
                             for i in range(n - 2)]), x


def chain_casadi(ca, x):
    return ca.sum1(ca.log(1 + (x[1:-1] - x[:-2]) ** 2)
                   + 0.5 * ca.exp(-x[:-2] * x[2:]) * ca.sin(x[1:-1]))


def rosenbrock_jax(jnp, x):
    return jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def grid_jax(m: int):
    def energy(jnp, x):
        u = x.reshape(m, m)  # row-major, as the symbols are numbered
        return (jnp.sum((u[1:, :] - u[:-1, :]) ** 2) + jnp.sum((u[:, 1:] - u[:, :-1]) ** 2)
                + jnp.sum(x ** 4 / 4 + jnp.cos(x)))

    return energy


def chain_jax(jnp, x):
    return jnp.sum(jnp.log(1 + (x[1:-1] - x[:-2]) ** 2)
                   + 0.5 * jnp.exp(-x[:-2] * x[2:]) * jnp.sin(x[1:-1]))


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
    parser.add_argument("--n", default="10000,100000", help="Rosenbrock sizes, comma-separated")
    parser.add_argument("--grid", type=int, default=300)
    parser.add_argument("--chain", type=int, default=100_000, help="the held-out family's size")
    parser.add_argument("--no-value-kernel", action="store_true",
                        help="skip sg.compile's value+gradient kernel and the minimize run")
    parser.add_argument("--symbolic-max", type=int, default=10_000,
                        help="largest size whose symbolic sparse kernels are built too")
    parser.add_argument("--states", type=int, default=1000)
    parser.add_argument("--backend", default="numba")
    parser.add_argument("--parts", default="rosenbrock,grid,chain,ode",
                        help="comma-separated: rosenbrock, grid, chain, ode")
    a = parser.parse_args()
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        # One BLAS thread: on a loaded machine OpenBLAS's threads make each of trust-constr's
        # dot products of 10^5 values 13 ms instead of 0.02 (measured here); NumPy's own
        # Hessian and the kernels use no BLAS. Set before NumPy loads it: the run starts over.
        os.execve(sys.executable, [sys.executable, "-m", "benchmarks.sparse", *sys.argv[1:]],
                  {**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    parts = set(a.parts.split(","))
    print(f"load average {os.getloadavg()[0]:.2f} at the start; OPENBLAS_NUM_THREADS="
          f"{os.environ['OPENBLAS_NUM_THREADS']}")
    if "rosenbrock" in parts:
        for n in map(int, a.n.split(",")):
            _sparse_hessian_report("Chained Rosenbrock", lambda n=n: rosenbrock(n),
                                   rosenbrock_numpy_values, rosenbrock_casadi, rosenbrock_jax, n,
                                   a.backend, a.symbolic_max, not a.no_value_kernel,
                                   rosen_value_grad)
            if n == max(map(int, a.n.split(","))) and not a.no_value_kernel:
                _minimize_report(n, a.backend)
    if "grid" in parts:
        _sparse_hessian_report(f"2-D Laplacian-type energy {a.grid}x{a.grid}",
                               lambda: grid_energy(a.grid), grid_numpy_values(a.grid),
                               grid_casadi(a.grid), grid_jax(a.grid), a.grid * a.grid,
                               a.backend, a.symbolic_max, not a.no_value_kernel)
    if "chain" in parts:
        _sparse_hessian_report("Held-out chain (log, exp, sin over 3 variables)",
                               lambda: chain(a.chain), None, chain_casadi, chain_jax, a.chain,
                               a.backend, a.symbolic_max, not a.no_value_kernel)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
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
