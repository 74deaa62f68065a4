"""SciPy's optimizers (and IPOPT) on symgraph expressions: derivatives come compiled.

    >>> import symgraph as sg, symgraph.optimize
    >>> x, y = sg.symbols("x y")
    >>> result = sg.optimize.minimize((1 - x)**2 + 100*(y - x**2)**2, [x, y], [-1.0, 2.0],
    ...                               method="trust-constr")

`minimize` takes SciPy's names and passes every other keyword to `scipy.optimize.minimize`,
returning SciPy's own result. The value and gradient come from one fused kernel
(``jac=True``); the method decides the second-order information it gets: the sparse Hessian
(csr_array) for trust-constr, ``hessp`` (one forward-over-reverse kernel) for Newton-CG,
trust-ncg and trust-krylov, the dense Hessian for dogleg and trust-exact. Constraints are
``{"type": "ineq" | "eq", "fun": expression or list of them}`` (``ineq`` means ``fun >= 0``,
as in SciPy), with their Jacobians (sparse for trust-constr, with the constraints' Hessians
too). ``method="ipopt"`` solves with cyipopt (``pip install cyipopt``; it needs IPOPT:
``apt-get install coinor-libipopt-dev liblapack-dev libblas-dev pkg-config``): sparse
Jacobian and Lagrangian Hessian structures, triplets in the order IPOPT expects.

`least_squares` wraps `scipy.optimize.least_squares` with the residuals' Jacobian (sparse when
it pays). SciPy is imported when these run, never by ``import symgraph``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .api import CompiledFunction
from .frontends.coerce import as_expression, as_symbols
from .ir.node import Node, const
from .runtime.sparse import CsrLayout, Lagrangian

_HESSP_METHODS = {"newton-cg", "trust-ncg", "trust-krylov"}
_DENSE_HESS_METHODS = {"dogleg", "trust-exact"}
# A sparse matrix pays once it is this large and at most this dense.
SPARSE_MIN_SIZE, SPARSE_MAX_DENSITY = 400, 0.2


def _variables(x: Any) -> list[Node]:
    """Symbols from nodes, names, or an array of symbols (flattened in C order)."""
    if isinstance(x, (str, Node)):
        return as_symbols(x, [])
    return as_symbols(list(np.asarray(x, dtype=object).ravel()), [])


def _expressions(fun: Any, role: str) -> list[Node]:
    items = fun if isinstance(fun, (list, tuple)) else (
        list(np.asarray(fun, dtype=object).ravel()) if isinstance(fun, np.ndarray) else [fun])
    if not items:
        raise ValueError(f"{role} has no expressions")
    return [as_expression(e) for e in items]


def _start(x0: Any, n: int) -> np.ndarray:
    x0 = np.asarray(x0, dtype=np.float64).ravel()
    if x0.shape != (n,):
        raise ValueError(f"x0 has {x0.size} value(s) for {n} variable(s)")
    return x0


class _Constraints:
    """The constraints' expressions, one compiled vector function, and their kinds."""

    def __init__(self, constraints: Any, variables: list[Node], options: dict) -> None:
        if isinstance(constraints, dict):
            constraints = [constraints]
        self.groups: list[tuple[str, list[Node]]] = []
        for k, c in enumerate(constraints or ()):
            if not isinstance(c, dict) or "fun" not in c or c.get("type") not in ("eq", "ineq"):
                raise ValueError(f"constraints[{k}] must be a dict with 'type' 'eq' or 'ineq' "
                                 "and 'fun' (an expression or a list of them)")
            self.groups.append((c["type"], _expressions(c["fun"], f"constraints[{k}]['fun']")))
        self.expressions = [e for _, group in self.groups for e in group]
        self.fn = (CompiledFunction(self.expressions, variables, **options)
                   if self.expressions else None)

    def slices(self):
        start = 0
        for kind, group in self.groups:
            yield kind, slice(start, start + len(group))
            start += len(group)


def minimize(f: Any, x: Any, x0: Any, method: str | None = None, constraints: Any = (),
             bounds: Any = None, *, backend: str = "numba", strategy: str = "auto",
             **kw: Any) -> Any:
    """``scipy.optimize.minimize`` of expression `f` over the symbols `x` from `x0`, with
    compiled derivatives (see the module's docstring); ``method="ipopt"`` uses cyipopt.
    Every other keyword goes to the solver as it is."""
    variables = _variables(x)
    x0 = _start(x0, len(variables))
    options = {"backend": backend, "strategy": strategy}
    objective = as_expression(f)
    fn = CompiledFunction(objective, variables, **options)
    cons = _Constraints(constraints, variables, options)
    if method is not None and method.lower() == "ipopt":
        return _ipopt(fn, objective, cons, variables, x0, bounds, options, **kw)
    from scipy import optimize

    name = (method or ("SLSQP" if cons.expressions else "BFGS")).lower()
    if name in _HESSP_METHODS and "hess" not in kw:
        kw.setdefault("hessp", fn.hessp)
    elif name == "trust-constr" and "hessp" not in kw:
        kw.setdefault("hess", lambda p: fn.hessian(p, sparse=True))
    elif name in _DENSE_HESS_METHODS and "hessp" not in kw:
        kw.setdefault("hess", fn.hessian)
    if cons.fn is not None:
        kw["constraints"] = _scipy_constraints(cons, objective, variables, name, options)
    return optimize.minimize(fn.value_and_grad, x0, method=method, jac=True, bounds=bounds,
                             **kw)


def _scipy_constraints(cons: _Constraints, objective: Node, variables: list[Node], name: str,
                       options: dict) -> list:
    from scipy import optimize

    fn, made = cons.fn, []
    if name != "trust-constr":  # SLSQP, COBYLA...: dicts of dense functions per group
        for kind, part in cons.slices():
            made.append({"type": kind, "fun": lambda p, s=part: fn(p)[s],
                         "jac": lambda p, s=part: fn.jacobian(p)[s]})
        return made
    lagrangian = Lagrangian(const(0.0), cons.expressions, variables,
                            backend=fn.derivative_kernels.backend, cache_dir=None,
                            strategy=options["strategy"])
    n = len(variables)
    layout = CsrLayout(*lagrangian.pattern, (n, n), symmetric=True)

    def jac(p):
        return fn.jacobian(p, sparse=True)

    def hess(p, v):
        return layout(lagrangian(p, 0.0, v))

    lower = np.concatenate([np.zeros(s.stop - s.start) for _, s in cons.slices()])
    upper = np.concatenate([np.zeros(s.stop - s.start) if kind == "eq" else
                            np.full(s.stop - s.start, np.inf) for kind, s in cons.slices()])
    return [optimize.NonlinearConstraint(fn, lower, upper, jac=jac, hess=hess)]


def _bounds_arrays(bounds: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    lower, upper = np.full(n, -np.inf), np.full(n, np.inf)
    if bounds is None:
        return lower, upper
    if hasattr(bounds, "lb"):  # scipy.optimize.Bounds
        return (np.broadcast_to(np.asarray(bounds.lb, float), (n,)).copy(),
                np.broadcast_to(np.asarray(bounds.ub, float), (n,)).copy())
    if len(bounds) != n:
        raise ValueError(f"bounds has {len(bounds)} pair(s) for {n} variable(s)")
    for i, (lo, hi) in enumerate(bounds):
        lower[i] = -np.inf if lo is None else lo
        upper[i] = np.inf if hi is None else hi
    return lower, upper


def _ipopt(fn: CompiledFunction, objective: Node, cons: _Constraints, variables: list[Node],
           x0: np.ndarray, bounds: Any, options: dict, *, tol: float | None = None,
           options_ipopt: dict | None = None, **kw: Any) -> Any:
    try:
        import cyipopt
    except ImportError:
        raise ImportError("method='ipopt' needs cyipopt: apt-get install coinor-libipopt-dev "
                          "liblapack-dev libblas-dev pkg-config; pip install cyipopt") from None
    from scipy.optimize import OptimizeResult

    n, m = len(variables), len(cons.expressions)
    lagrangian = Lagrangian(objective, cons.expressions, variables,
                            backend=fn.derivative_kernels.backend,
                            strategy=options["strategy"])
    cfn = cons.fn
    jac_rows, jac_cols = (cfn.derivative_kernels.jacobian_pattern() if cfn is not None
                          else (np.zeros(0, np.int64),) * 2)
    counts = {"nfev": 0, "njev": 0}

    class Problem:
        def objective(self, p):
            counts["nfev"] += 1
            return fn(p)

        def gradient(self, p):
            counts["njev"] += 1
            return fn.grad(p)

        def constraints(self, p):
            return cfn(p) if cfn is not None else np.zeros(0)

        def jacobianstructure(self):
            return jac_rows, jac_cols

        def jacobian(self, p):
            if cfn is None:
                return np.zeros(0)
            return cfn.derivative_kernels.jacobian_values(np.ascontiguousarray(p, float))

        def hessianstructure(self):
            return lagrangian.pattern

        def hessian(self, p, lam, obj_factor):
            return lagrangian(p, obj_factor, lam)

    lower, upper = _bounds_arrays(bounds, n)
    cl = np.zeros(m)
    cu = np.concatenate([np.zeros(s.stop - s.start) if kind == "eq" else
                         np.full(s.stop - s.start, np.inf) for kind, s in cons.slices()]
                        ) if m else np.zeros(0)
    problem = cyipopt.Problem(n=n, m=m, problem_obj=Problem(), lb=lower, ub=upper, cl=cl, cu=cu)
    settings = dict(options_ipopt or kw.pop("options", None) or {})
    settings.setdefault("print_level", 0)
    if tol is not None:
        settings["tol"] = tol
    for key, value in settings.items():
        problem.add_option(key, value)
    if kw:
        raise TypeError(f"method='ipopt' takes no keyword(s) {sorted(kw)}; give IPOPT's "
                        "options as options={...}")
    solution, info = problem.solve(x0)
    return OptimizeResult(x=solution, fun=info["obj_val"], status=info["status"],
                          success=info["status"] in (0, 1), message=info["status_msg"],
                          info=info, constr=info["g"], mult_g=info["mult_g"],
                          nfev=counts["nfev"], njev=counts["njev"])


def least_squares(residuals: Any, x: Any, x0: Any, *, sparse: bool | None = None,
                  backend: str = "numba", strategy: str = "auto", **kw: Any) -> Any:
    """``scipy.optimize.least_squares`` of the residual expressions over symbols `x` from
    `x0`, with their compiled Jacobian: a csr_array when `sparse` (default: when it pays,
    a large Jacobian at most 20% full), else dense. Other keywords go to SciPy."""
    from scipy import optimize

    variables = _variables(x)
    x0 = _start(x0, len(variables))
    outputs = _expressions(residuals, "residuals")
    fn = CompiledFunction(outputs, variables, backend=backend, strategy=strategy)
    m, n = len(outputs), len(variables)
    if sparse is None:
        nnz = len(fn.derivative_kernels.jacobian_pattern()[0])
        sparse = m * n >= SPARSE_MIN_SIZE**2 and nnz <= SPARSE_MAX_DENSITY * m * n
    if sparse:
        def jac(p):
            return fn.jacobian(p, sparse=True)
    else:
        jac = fn.jacobian
    kw.setdefault("jac", jac)
    return optimize.least_squares(fn, x0, **kw)


__all__ = ["least_squares", "minimize"]
