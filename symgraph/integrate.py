"""SciPy's `solve_ivp` on symgraph expressions, with the compiled (sparse) Jacobian.

    >>> import symgraph as sg, symgraph.integrate
    >>> t, a, b = sg.symbols("t a b")
    >>> k = sg.symbol("k")
    >>> solution = sg.integrate.solve_ivp([-k * a, k * a - b], t, [a, b], (0.0, 5.0),
    ...                                   [1.0, 0.0], params=[k], args=(0.5,), method="BDF")

The right-hand side is a list of expressions in `t` (None for an autonomous system), the
states `y` and the symbols `params`, whose values come as SciPy's ``args``. The implicit
methods (BDF, Radau, LSODA) get ``jac(t, y)`` from one compiled kernel of the Jacobian's
structural nonzeros: a csr_array for BDF and Radau when it pays (large and at most 20% full),
dense otherwise and always for LSODA (which takes no sparse matrix). Every other keyword goes
to ``scipy.integrate.solve_ivp``, whose own result comes back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .api import CompiledFunction
from .frontends.coerce import as_expression, as_symbols
from .ir.node import Node

_IMPLICIT = {"bdf", "radau", "lsoda"}
_SPARSE_OK = {"bdf", "radau"}
SPARSE_MIN_STATES, SPARSE_MAX_DENSITY = 50, 0.2


def _symbols(x: Any, role: str) -> list[Node]:
    if x is None:
        return []
    if isinstance(x, (str, Node)):
        return as_symbols(x, [], role=role)
    return as_symbols(list(np.asarray(x, dtype=object).ravel()), [], role=role)


class OdeKernels:
    """``fun(t, y, *args)`` and ``jac(t, y, *args)`` of a right-hand side, compiled."""

    def __init__(self, rhs: Any, t: Any, y: Any, params: Any = (), *, backend: str = "numba",
                 strategy: str = "auto") -> None:
        items = rhs if isinstance(rhs, (list, tuple)) else list(np.asarray(rhs, object).ravel())
        self.rhs = [as_expression(e) for e in items]
        self.t = _symbols(t, "t")
        self.y = _symbols(y, "the states y")
        self.params = _symbols(params, "params")
        if len(self.rhs) != len(self.y):
            raise ValueError(f"rhs has {len(self.rhs)} expression(s) for {len(self.y)} "
                             "state(s)")
        self.fn = CompiledFunction(self.rhs, self.t + self.y + self.params, wrt=self.y,
                                   backend=backend, strategy=strategy)
        self.n_params = len(self.params)
        self.pattern = self.fn.derivative_kernels.jacobian_pattern()

    def point(self, t: float, y: np.ndarray, args: tuple) -> np.ndarray:
        if len(args) != self.n_params:
            raise ValueError(f"expected {self.n_params} parameter value(s) in args, got "
                             f"{len(args)}")
        head = [t] if self.t else []
        return np.concatenate([head, np.asarray(y, dtype=np.float64).ravel(),
                               np.asarray(args, dtype=np.float64).ravel()])

    def fun(self, t: float, y: np.ndarray, *args: float) -> np.ndarray:
        return self.fn(self.point(t, y, args))

    def jac_sparse(self, t: float, y: np.ndarray, *args: float) -> Any:
        return self.fn.jacobian(self.point(t, y, args), sparse=True)

    def jac_dense(self, t: float, y: np.ndarray, *args: float) -> np.ndarray:
        return self.fn.jacobian(self.point(t, y, args))

    def sparse_pays(self) -> bool:
        n = len(self.y)
        return n >= SPARSE_MIN_STATES and len(self.pattern[0]) <= SPARSE_MAX_DENSITY * n * n


def solve_ivp(rhs: Any, t: Any, y: Any, t_span: Any, y0: Any, method: str = "RK45", *,
              params: Any = (), args: tuple | None = None, sparse: bool | None = None,
              backend: str = "numba", strategy: str = "auto", **kw: Any) -> Any:
    """``scipy.integrate.solve_ivp`` of ``dy/dt = rhs(t, y, params)`` (see the module's
    docstring); `sparse` forces the Jacobian's form (default: sparse when it pays)."""
    from scipy import integrate

    kernels = OdeKernels(rhs, t, y, params, backend=backend, strategy=strategy)
    y0 = np.asarray(y0, dtype=np.float64).ravel()
    if y0.shape != (len(kernels.y),):
        raise ValueError(f"y0 has {y0.size} value(s) for {len(kernels.y)} state(s)")
    name = method.lower() if isinstance(method, str) else ""
    if name in _IMPLICIT and "jac" not in kw:
        use_sparse = (name in _SPARSE_OK and (kernels.sparse_pays() if sparse is None
                                              else sparse))
        kw["jac"] = kernels.jac_sparse if use_sparse else kernels.jac_dense
    if args is None:
        args = ()
    args = tuple(args)
    if len(args) != kernels.n_params:
        raise ValueError(f"args has {len(args)} value(s) for params "
                         f"{[p.value for p in kernels.params]}")
    return integrate.solve_ivp(kernels.fun, t_span, y0, method=method,
                               args=args if args else None, **kw)


__all__ = ["OdeKernels", "solve_ivp"]
