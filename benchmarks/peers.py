"""The peers, each given the workload's formula from symgraph's DAG:

* SymPy ``diff`` + ``lambdify(cse=True)``: NumPy (SciPy for erf) and the usual Numba recipe
  (``numba.njit`` of the ``math`` lambdify, a ``prange`` loop over rows for batches);
* SymEngine ``diff`` + ``Lambdify(cse=True)``, LLVM backend (lambda backend when LLVM is missing);
* JAX ``jit(value_and_grad)``, batches ``jit(vmap(value_and_grad))``, float64;
* PyTorch autograd (define-by-run: the graph is recorded on every call);
* CasADi SX ``Function`` with ``gradient``, on its virtual machine and JIT-compiled to C
  (gcc -O3); batches through ``Function.map``.

SymPy and SymEngine get ``symgraph.to_sympy``'s expression; JAX, PyTorch and CasADi the
straight-line code of benchmarks.convert (each distinct node once, as a user would write it).
Setup stages are timed; diff/lambdify run inside the worker's time box.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from benchmarks import convert
from benchmarks.measure import stage
from benchmarks.tools import Prepared, ast_op_count, numba_threads

DEEP = "Python recursion limit raised to 200,000 (SymPy recurses on deep trees)"


def _split(out: Any) -> tuple[float, np.ndarray]:
    flat = [float(np.asarray(v)) for v in out]
    return flat[0], np.array(flat[1:])


def _columns(out: list, rows: int) -> tuple[np.ndarray, np.ndarray]:
    full = [np.broadcast_to(np.asarray(v, dtype=float), (rows,)) for v in out]  # constants
    return full[0], np.stack(full[1:], axis=1)


# -- SymPy ----------------------------------------------------------------------------------------


def prepare_sympy(expr, args, point, **_: Any) -> list[Prepared]:
    import sympy as sp

    from symgraph.frontends.sympy_bridge import to_sympy

    setup: dict[str, float] = {}
    syms = [sp.Symbol(a.value, real=True) for a in args]
    e = stage(setup, "to_sympy", lambda: to_sympy(expr, {s.name: s for s in syms}))
    grads = stage(setup, "diff", lambda: [sp.diff(e, s) for s in syms])
    rows = []

    def make_numpy() -> Prepared:
        steps = dict(setup)
        modules = ["numpy", "scipy"]
        f = stage(steps, "lambdify", lambda: sp.lambdify(syms, [e, *grads], modules,
                                                          cse=True))
        fv = sp.lambdify(syms, e, modules, cse=True)
        floats = [float(v) for v in point]
        stage(steps, "first call", lambda: f(*floats))
        ops = (ast_op_count(inspect.getsource(fv)), ast_op_count(inspect.getsource(f)))
        return Prepared(
            "SymPy lambdify NumPy", lambda: f(*floats),
            lambda p: _split(f(*[float(v) for v in p])),
            lambda X: _columns(f(*_cols(X)), X.shape[0]), lambda X: fv(*_cols(X)), None, steps,
            ops, notes=["NumPy: one thread", DEEP])

    def make_numba() -> Prepared:
        import numba

        steps = dict(setup)
        f = stage(steps, "lambdify", lambda: sp.lambdify(syms, [e, *grads], "math",
                                                          cse=True))
        fv = sp.lambdify(syms, [e], "math", cse=True)
        jf, jv = numba.njit(f), numba.njit(fv)
        floats = [float(v) for v in point]
        stage(steps, "jit 1-point", lambda: jf(*floats))
        batch = _numba_rows(jf, len(syms), 1 + len(syms))
        vbatch = _numba_rows(jv, len(syms), 1)
        ops = (ast_op_count(inspect.getsource(fv)), ast_op_count(inspect.getsource(f)))

        def batch_vg(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            out = np.empty((X.shape[0], 1 + X.shape[1]))
            batch(X, out)
            return out[:, 0], out[:, 1:]

        def batch_value(X: np.ndarray) -> np.ndarray:
            out = np.empty((X.shape[0], 1))
            vbatch(X, out)
            return out

        return Prepared("SymPy lambdify + numba.njit", lambda: jf(*floats),
                        lambda p: _split(jf(*[float(v) for v in p])), batch_vg, batch_value,
                        numba_threads, steps, ops, notes=[DEEP])

    for make in (make_numpy, make_numba):
        try:
            rows.append(make())
        except Exception as error:  # one variant failing must not hide the other
            rows.append(_failed(make.__name__, error))
    return rows


def _cols(X: np.ndarray) -> list[np.ndarray]:
    return [np.ascontiguousarray(X[:, i]) for i in range(X.shape[1])]


def _numba_rows(jitted, n: int, m: int):
    """``njit(parallel)`` loop calling the jitted per-point function on each row."""
    import numba

    call = ", ".join(f"X[i, {j}]" for j in range(n))
    stores = "\n".join(f"        OUT[i, {k}] = r[{k}]" for k in range(m))
    code = (f"def rows(X, OUT):\n    for i in numba.prange(X.shape[0]):\n"
            f"        r = point({call})\n{stores}\n")
    scope = {"numba": numba, "point": jitted}
    exec(code, scope)  # our own generated text
    return numba.njit(parallel=True)(scope["rows"])


def _failed(label: str, error: BaseException) -> Prepared:
    """A row that reports `error` in place of every figure."""
    def fail(*_: Any) -> Any:
        raise RuntimeError(f"{type(error).__name__}: {error}")

    label = {"make_numpy": "SymPy lambdify NumPy",
             "make_numba": "SymPy lambdify + numba.njit"}.get(label, label)
    return Prepared(label, fail, fail, fail, None, None,
                    details={"error": f"{type(error).__name__}: {str(error)[:300]}"})


# -- SymEngine ------------------------------------------------------------------------------------


def prepare_symengine(expr, args, point, **_: Any) -> list[Prepared]:
    import symengine as se
    import sympy as sp

    from symgraph.frontends.sympy_bridge import to_sympy

    setup: dict[str, float] = {}
    syms = [sp.Symbol(a.value, real=True) for a in args]
    e = stage(setup, "to_sympy", lambda: to_sympy(expr, {s.name: s for s in syms}))
    e = stage(setup, "sympify", lambda: se.sympify(e))
    ses = [se.Symbol(s.name) for s in syms]
    grads = stage(setup, "diff", lambda: [se.diff(e, s) for s in ses])
    notes = []
    try:
        f = stage(setup, "Lambdify (LLVM)",
            lambda: se.Lambdify(ses, [e, *grads], backend="llvm", cse=True))
        fv = se.Lambdify(ses, [e], backend="llvm", cse=True)
    except (RuntimeError, ValueError) as error:  # built without LLVM
        notes.append(f"lambda backend (LLVM unavailable: {error})")
        f = stage(setup, "Lambdify (lambda)", lambda: se.Lambdify(ses, [e, *grads],
                                                                   cse=True))
        fv = se.Lambdify(ses, [e], cse=True)
    x = np.array(point, dtype=float)
    stage(setup, "first call", lambda: f(x))
    reps, reduced = se.cse([e, *grads])
    reps_v, reduced_v = se.cse([e])
    ops = (sum(se.count_ops(r) for _, r in reps_v) + sum(se.count_ops(r) for r in reduced_v),
           sum(se.count_ops(r) for _, r in reps) + sum(se.count_ops(r) for r in reduced))

    def batch_vg(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = f(X).reshape(X.shape[0], -1)  # one input: (N, 1) reads as N x 1 points
        return out[:, 0], out[:, 1:]

    return [Prepared("SymEngine Lambdify LLVM", lambda: f(x),
                     lambda p: _split(f(np.asarray(p, dtype=float))), batch_vg, fv, None, setup,
                     ops, notes=notes + ["one thread", "ops: symengine.count_ops after cse", DEEP])]


# -- what the straight-line code calls in each library (convert.templates: NumPy's names) ------

_SPECIAL = {"erf": "{}.erf({{0}})", "erfc": "{}.erfc({{0}})", "erfinv": "{}.erfinv({{0}})",
            "lgamma": "{}.gammaln({{0}})", "digamma": "{}.digamma({{0}})",
            "xlogy": "{}.xlogy({{0}}, {{1}})"}
NUMPY_OVERRIDES = {  # the tests' oracle namespace: numpy + scipy.special as `sc`
    **{op: t.format("sc") for op, t in _SPECIAL.items()},
    "where": "np.where({0} != 0, {1}, {2})", "sigmoid": "sc.expit({0})",
    "softplus": "np.logaddexp(0.0, {0})", "relu": "np.maximum({0}, 0.0)",
    "gamma": "sc.gamma({0})", "beta": "sc.beta({0}, {1})", "lbeta": "sc.betaln({0}, {1})",
}
JAX_OVERRIDES = {
    **{op: t.format("jsp") for op, t in _SPECIAL.items()},
    "where": "jnp.where({0} != 0, {1}, {2})", "sigmoid": "jax.nn.sigmoid({0})",
    "softplus": "jax.nn.softplus({0})", "relu": "jax.nn.relu({0})", "gamma": "jsp.gamma({0})",
    "beta": "jsp.beta({0}, {1})", "lbeta": "jsp.betaln({0}, {1})",
}
TORCH_OVERRIDES = {
    **{op: f"torch.{op}({{0}})" for op in ("asin", "acos", "atan", "asinh", "acosh", "atanh",
                                          "erf", "erfc", "erfinv", "lgamma", "digamma",
                                          "sigmoid", "relu")},
    "cbrt": "torch.sign({0}) * torch.abs({0}) ** (1 / 3)",
    **{op: f"torch.{name}(T({{0}}), T({{1}}))" for op, name in (
        ("min", "minimum"), ("max", "maximum"), ("atan2", "atan2"), ("hypot", "hypot"),
        ("xlogy", "xlogy"))},
    "where": "torch.where(T({0}) != 0, T({1}), T({2}))",
    "softplus": "torch.nn.functional.softplus({0})",
}
CASADI_OVERRIDES = {
    **{op: f"ca.{op}({{0}})" for op in ("asin", "acos", "atan", "asinh", "acosh", "atanh",
                                       "erf", "erfinv")},
    "abs": "ca.fabs({0})", "min": "ca.fmin({0}, {1})", "max": "ca.fmax({0}, {1})",
    "atan2": "ca.atan2({0}, {1})", "hypot": "ca.hypot({0}, {1})",
    "where": "ca.if_else({0} != 0, {1}, {2})", "relu": "ca.fmax({0}, 0)",
    "sigmoid": "1 / (1 + ca.exp(-{0}))",
    "softplus": "ca.fmax({0}, 0) + ca.log1p(ca.exp(-ca.fabs({0})))",
    "cbrt": "ca.sign({0}) * ca.fabs({0}) ** (1 / 3)", "log2": "ca.log({0}) / 0.6931471805599453",
    "xlogy": "ca.if_else({0} == 0, 0, {0} * ca.log({1}))",
}


# -- JAX ------------------------------------------------------------------------------------------


def prepare_jax(expr, args, point, **_: Any) -> list[Prepared]:
    import os

    import jax

    jax.config.update("jax_enable_x64", True)
    if os.environ.get("BENCH_JAX_CACHE"):  # persistent compilation cache: the "warm" setup
        jax.config.update("jax_compilation_cache_dir", os.environ["BENCH_JAX_CACHE"])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    import jax.numpy as jnp
    import jax.scipy.special as jsp

    setup: dict[str, float] = {}
    table = convert.templates("jnp", JAX_OVERRIDES)
    f = stage(setup, "convert", lambda: convert.function(
        [expr], args, table, {"jnp": jnp, "jsp": jsp, "jax": jax}))
    vg = jax.jit(jax.value_and_grad(f))
    vb = jax.jit(jax.vmap(jax.value_and_grad(f)))
    fb = jax.jit(jax.vmap(f))
    x = np.array(point, dtype=float)
    stage(setup, "jit 1-point", lambda: jax.block_until_ready(vg(x)))

    def value_grad(p: np.ndarray) -> tuple[float, np.ndarray]:
        v, g = vg(np.asarray(p, dtype=float))
        return float(v), np.asarray(g)

    xj = jnp.asarray(x)
    ops = (len(jax.make_jaxpr(f)(xj).jaxpr.eqns),
           len(jax.make_jaxpr(jax.value_and_grad(f))(xj).jaxpr.eqns))
    return [Prepared("JAX jit", lambda: jax.block_until_ready(vg(x)), value_grad,
                     lambda X: jax.block_until_ready(vb(X)),
                     lambda X: jax.block_until_ready(fb(X)), lambda k: None, setup, ops,
                     notes=["1 core = all threads pinned to one CPU", "ops: jaxpr equations"],
                     pin_for_one_core=True)]


# -- PyTorch --------------------------------------------------------------------------------------


def prepare_torch(expr, args, point, **_: Any) -> list[Prepared]:
    import torch

    setup: dict[str, float] = {}
    table = convert.templates("torch", TORCH_OVERRIDES)

    def T(v: Any) -> Any:  # torch's binary functions take tensors only, not Python floats
        return torch.as_tensor(v, dtype=torch.float64)

    f = stage(setup, "convert", lambda: convert.function([expr], args, table,
                                                             {"torch": torch, "T": T}))
    x = np.array(point, dtype=float)

    def value_grad(p: np.ndarray) -> tuple[float, np.ndarray]:
        xt = torch.tensor(p, dtype=torch.float64, requires_grad=True)
        y = f(xt)
        (g,) = torch.autograd.grad(y, xt)
        return y.item(), g.numpy()

    def batch_vg(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xt = torch.from_numpy(np.ascontiguousarray(X.T)).requires_grad_(True)
        y = f(xt)
        (g,) = torch.autograd.grad(y.sum(), xt)
        return y.detach().numpy(), g.numpy().T

    def batch_value(X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return f(torch.from_numpy(np.ascontiguousarray(X.T))).numpy()

    stage(setup, "first call", lambda: value_grad(x))
    return [Prepared("PyTorch autograd", lambda: value_grad(x), value_grad, batch_vg,
                     batch_value, torch.set_num_threads, setup,
                     notes=["eager: the graph is recorded on every call"])]


# -- CasADi ---------------------------------------------------------------------------------------


def prepare_casadi(expr, args, point, **_: Any) -> list[Prepared]:
    """CasADi's SX virtual machine, and the same Functions JIT-compiled to C by gcc -O3."""
    import casadi as ca

    setup: dict[str, float] = {}
    table = convert.templates("ca", CASADI_OVERRIDES)
    n = len(args)

    def build() -> tuple[Any, Any]:
        x = ca.SX.sym("x", n)
        fx = convert.function([expr], args, table, {"ca": ca})(x)
        return x, fx

    x_sym, fx = stage(setup, "build SX + gradient", build)
    grad = ca.gradient(fx, x_sym)
    rows = []
    for label, options in (("CasADi SX Function", {}), ("CasADi JIT (gcc -O3)", CASADI_JIT)):
        try:
            rows.append(_casadi_row(ca, label, x_sym, fx, grad, options, dict(setup), point))
        except Exception as error:  # no compiler: the virtual machine's row still stands
            rows.append(_failed(label, error))
    return rows


CASADI_JIT = {"jit": True, "compiler": "shell", "jit_options": {"flags": ["-O3"]}}


def _casadi_row(ca, label, x_sym, fx, grad, options, setup, point) -> Prepared:
    F = stage(setup, "Function" + (" + jit" if options else ""),
              lambda: ca.Function("vg", [x_sym], [fx, grad], options))
    Fv = ca.Function("v", [x_sym], [fx], options)
    x = np.array(point, dtype=float)
    stage(setup, "first call", lambda: F(x))
    maps: dict[tuple[str, int, int], Any] = {}
    threads = [1]

    def mapped(fun, rows: int) -> Any:
        key = (fun.name(), rows, threads[0])
        if key not in maps:  # map over the batch: serial, or one thread per core
            maps[key] = fun.map(rows, "serial") if threads[0] == 1 else \
                fun.map(rows, "thread", threads[0])
        return maps[key]

    def value_grad(p: np.ndarray) -> tuple[float, np.ndarray]:
        v, g = F(np.asarray(p, dtype=float))
        return float(v), np.array(g).ravel()

    def batch_vg(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v, g = mapped(F, X.shape[0])(X.T)
        return np.array(v).ravel(), np.array(g).T

    def batch_value(X: np.ndarray) -> np.ndarray:
        return np.array(mapped(Fv, X.shape[0])(X.T)).ravel()

    def set_threads(k: int) -> None:
        threads[0] = k

    kind = "C from CasADi's codegen, compiled by gcc -O3" if options else \
        "SX virtual machine (no C codegen)"
    return Prepared(label, lambda: F(x), value_grad, batch_vg, batch_value, set_threads, setup,
                    (Fv.n_instructions(), F.n_instructions()) if not options else (None, None),
                    notes=[kind, "batches: Function.map over NumPy rows", "ops: n_instructions"])


PEERS = {
    "sympy": prepare_sympy,
    "symengine": prepare_symengine,
    "jax": prepare_jax,
    "torch": prepare_torch,
    "casadi": prepare_casadi,
}
IMPORTS = {"sympy": ["sympy", "scipy"], "symengine": ["symengine"], "jax": ["jax"],
           "torch": ["torch"], "casadi": ["casadi"]}
