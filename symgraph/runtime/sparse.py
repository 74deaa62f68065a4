"""The kernels of sparse derivatives and derivative products, built on first use.

`DerivativeKernels` belongs to one compiled function and builds, when first asked, one kernel
per product (lower.sparse_products): the sparse Jacobian or Hessian (structural nonzeros in
pattern order; SciPy's csr_array on request), ``hessp``, ``jvp`` and ``vjp``. `Lagrangian` is
the lower triangle of ``sigma*Hf + sum(lam_i*Hg_i)`` for constrained solvers (IPOPT's
``hessian``). SciPy is imported only to make a csr_array: ``import symgraph`` never imports it.

Each kernel is the program's ordinary ``row(x, out)`` / ``batch(X, OUT)`` (a Numba dispatcher
for straight-line kernels, callable from users' own ``@njit`` code); products with a vector
take the point as ``[x, v]``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ad.sparsity import hessian_sparsity, jacobian_sparsity
from ..backends.registry import Backend
from ..ir.node import Node, combine
from ..lower.products import Product
from ..lower.sparse_products import (
    HESSP,
    JVP,
    VJP,
    sparse_hessian_product,
    sparse_jacobian_product,
    vector_inputs,
)
from .build import Build, build
from .separable import SeparableSum, separable_sum


def csr(values: np.ndarray, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int],
        symmetric: bool = False) -> Any:
    """A scipy.sparse.csr_array of the entries (rows, cols) = values; `symmetric`: the entries
    are a lower triangle, mirrored into the full matrix."""
    return CsrLayout(rows, cols, shape, symmetric)(values)


class CsrLayout:
    """Where each value of a pattern goes in a csr_array, worked out once: every later matrix
    is a gather of the values (a fresh coo -> csr conversion costs ~25x more)."""

    def __init__(self, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int],
                 symmetric: bool = False) -> None:
        rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
        source = np.arange(rows.size)
        if symmetric:
            off = rows != cols
            rows, cols = np.concatenate([rows, cols[off]]), np.concatenate([cols, rows[off]])
            source = np.concatenate([source, source[off]])
        order = np.lexsort((cols, rows))
        self.take, self.indices = source[order], cols[order].astype(np.int32)
        self.indptr = np.searchsorted(rows[order], np.arange(shape[0] + 1)).astype(np.int32)
        self.shape = shape

    def __call__(self, values: np.ndarray) -> Any:
        from scipy.sparse import csr_array  # optional: only sparse results need SciPy

        return csr_array((values[self.take], self.indices, self.indptr), shape=self.shape)


class _Kernel:
    """One built product: its row and batch kernels and its part of the row."""

    def __init__(self, built: Build, product: Product, m: int, k: int) -> None:
        self.built, self.name = built, product.name
        self.row, self.batch = built.rows[product.name], built.threaded[product.name]
        self.width = product.width(m, k)
        self.start = product.part(m, k)[0]

    def __call__(self, point: np.ndarray) -> np.ndarray:
        """The product's part, per point (1-D) or per row of a batch (2-D)."""
        point = np.ascontiguousarray(point, dtype=np.float64)
        if point.ndim == 1:
            out = np.empty(self.width)
            self.row(point, out)
        else:
            out = np.empty((point.shape[0], self.width))
            self.batch(point, out)
        return out[..., self.start:]


class DerivativeKernels:
    """Sparse derivatives and products of `outputs` over `args`, w.r.t. `wrt`."""

    def __init__(self, outputs: Sequence[Node], args: Sequence[Node], wrt: Sequence[Node], *,
                 backend: Backend, cache_dir: str | os.PathLike | None = None,
                 strategy: str = "auto") -> None:
        self.outputs, self.args, self.wrt = list(outputs), list(args), list(wrt)
        self.backend, self.cache_dir, self.strategy = backend, cache_dir, strategy
        self._kernels: dict[str, _Kernel] = {}
        self._patterns: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._layouts: dict[str, CsrLayout] = {}
        self._separable: list = []  # [SeparableSum or None], once asked

    @property
    def separable(self) -> SeparableSum | None:
        """The kernels of a large sum of small terms (runtime.separable), or None: then the
        sparse Hessian and hessp are the symbolic kernels."""
        if not self._separable:
            found = None
            if len(self.outputs) == 1 and self.backend.name == "numba":
                found = separable_sum(self.outputs[0], self.args, self.wrt,
                                      backend=self.backend, cache_dir=self.cache_dir)
            self._separable.append(found)
        return self._separable[0]

    def _build(self, product: Product, extra: Sequence[Node] = ()) -> _Kernel:
        kernel = self._kernels.get(product.name)
        if kernel is None:
            built = build(self.outputs, self.args + list(extra), self.wrt,
                          backend=self.backend, products=[product], cache_dir=self.cache_dir,
                          strategy=self.strategy)
            kernel = _Kernel(built, product, len(self.outputs), len(self.wrt))
            self._kernels[product.name] = kernel
        return kernel

    # -- patterns ----------------------------------------------------------------------------
    def jacobian_pattern(self) -> tuple[np.ndarray, np.ndarray]:
        if "jac" not in self._patterns:
            self._patterns["jac"] = jacobian_sparsity(self.outputs, self.wrt)
        return self._patterns["jac"]

    def hessian_pattern(self) -> tuple[np.ndarray, np.ndarray]:
        if "hess" not in self._patterns:
            separable = self.separable
            self._patterns["hess"] = (hessian_sparsity(self.outputs[0], self.wrt)
                                      if separable is None else separable.pattern)
        return self._patterns["hess"]

    # -- sparse derivatives ------------------------------------------------------------------
    def kernel(self, name: str) -> _Kernel:
        """The built kernel of product `name` (sparse_jac, sparse_hess, hessp, jvp, vjp)."""
        kernel = self._kernels.get(name)
        if kernel is not None:  # the fast path: no symbols made per call
            return kernel
        taken = self.args
        if name == "sparse_jac":
            return self._build(sparse_jacobian_product(len(self.jacobian_pattern()[0])))
        if name == "sparse_hess":
            return self._build(sparse_hessian_product(len(self.hessian_pattern()[0])))
        if name == "hessp":
            return self._build(HESSP, vector_inputs("hessp", len(self.wrt), taken))
        if name == "jvp":
            return self._build(JVP, vector_inputs("jvp", len(self.wrt), taken))
        if name == "vjp":
            return self._build(VJP, vector_inputs("vjp", len(self.outputs), taken))
        raise KeyError(f"no derivative product {name!r}; there are "
                       "['hessp', 'jvp', 'sparse_hess', 'sparse_jac', 'vjp']")

    def jacobian_values(self, x: np.ndarray) -> np.ndarray:
        return self.kernel("sparse_jac")(x)

    def hessian_values(self, x: np.ndarray) -> np.ndarray:
        """The lower triangle's nonzeros in pattern order."""
        separable = self.separable
        if separable is not None and np.ndim(x) == 1:
            return separable.hessian_values(x)
        if separable is not None and np.ndim(x) == 2:  # a batch: a point at a time
            values = np.empty((len(x), separable.nnz))
            for row, p in zip(values, x):
                row[:] = separable.hessian_values(p)
            return values
        return self.kernel("sparse_hess")(x)

    def _layout(self, kind: str) -> CsrLayout:
        layout = self._layouts.get(kind)
        if layout is None:
            if kind == "jac":
                rows, cols = self.jacobian_pattern()
                layout = CsrLayout(rows, cols, (len(self.outputs), len(self.wrt)))
            else:
                rows, cols = self.hessian_pattern()
                layout = CsrLayout(rows, cols, (len(self.wrt),) * 2, symmetric=True)
            self._layouts[kind] = layout
        return layout

    def jacobian(self, x: np.ndarray) -> Any:
        """csr_array of the Jacobian (a list of them for a batch)."""
        values, layout = self.jacobian_values(x), self._layout("jac")
        return [layout(v) for v in values] if values.ndim == 2 else layout(values)

    def hessian(self, x: np.ndarray) -> Any:
        """csr_array of the full symmetric Hessian (a list of them for a batch)."""
        values, layout = self.hessian_values(x), self._layout("hess")
        return [layout(v) for v in values] if values.ndim == 2 else layout(values)

    # -- products ----------------------------------------------------------------------------
    def _with(self, name: str, x: np.ndarray, vector: Any, size: int) -> np.ndarray:
        v = np.asarray(vector, dtype=np.float64)
        if v.shape[-1:] != (size,):
            raise ValueError(f"{name}: the vector needs {size} value(s) per point, got shape "
                             f"{v.shape}")
        if x.ndim == 1 and v.ndim == 1:
            return self.kernel(name)(np.concatenate([x, v]))
        x2, v2 = np.atleast_2d(x), np.atleast_2d(v)
        try:  # one point against a batch (either way), or as many rows as points (0 too)
            rows = np.broadcast_shapes((len(x2),), (len(v2),))[0]
        except ValueError:
            raise ValueError(f"{name}: {len(x2)} point(s) and {len(v2)} vector(s) do not "
                             "pair up (give one of either, or as many of both)") from None
        point = np.concatenate([np.broadcast_to(x2, (rows, x2.shape[1])),
                                np.broadcast_to(v2, (rows, size))], axis=1)
        return self.kernel(name)(point)

    def hessp(self, x: np.ndarray, v: Any) -> np.ndarray:
        separable = self.separable
        if separable is not None and np.ndim(x) in (1, 2) and np.ndim(v) in (1, 2):
            if np.shape(v)[-1:] != (len(self.wrt),):
                raise ValueError(f"hessp: the vector needs {len(self.wrt)} value(s) per "
                                 f"point, got shape {np.shape(v)}")
            if np.ndim(x) == 1 and np.ndim(v) == 1:
                return separable.hessp(x, v)
            x2, v2 = np.atleast_2d(x), np.atleast_2d(v)  # a batch: a point at a time
            rows = np.broadcast_shapes((len(x2),), (len(v2),))[0]
            x2 = np.broadcast_to(x2, (rows, x2.shape[1]))
            v2 = np.broadcast_to(v2, (rows, v2.shape[1]))
            result = np.empty((rows, len(self.wrt)))
            for row, p, w in zip(result, x2, v2):
                row[:] = separable.hessp(p, w)
            return result
        return self._with("hessp", x, v, len(self.wrt))

    def jvp(self, x: np.ndarray, v: Any) -> np.ndarray:
        return self._with("jvp", x, v, len(self.wrt))

    def vjp(self, x: np.ndarray, w: Any) -> np.ndarray:
        return self._with("vjp", x, w, len(self.outputs))


class Lagrangian:
    """The lower triangle of ``sigma * Hf + sum_i lam_i * Hg_i`` w.r.t. `wrt`, in the order
    of `pattern` (rows >= cols, row by row): IPOPT's `hessian` and `hessianstructure`."""

    def __init__(self, objective: Node, constraints: Sequence[Node], args: Sequence[Node],
                 wrt: Sequence[Node] | None = None, *, backend: Backend,
                 cache_dir: str | os.PathLike | None = None, strategy: str = "auto") -> None:
        wrt = list(args if wrt is None else wrt)
        scales = vector_inputs("lagrangian", 1 + len(constraints), args)
        terms = [scales[0].times(objective)]
        terms += [lam.times(g) for lam, g in zip(scales[1:], constraints)]
        self.expression = terms[0] if len(terms) == 1 else combine("add", terms)
        self.n_args, self.scales = len(args), scales
        self.kernels = DerivativeKernels([self.expression], list(args) + scales, wrt,
                                         backend=backend, cache_dir=cache_dir,
                                         strategy=strategy)
        self.pattern = self.kernels.hessian_pattern()

    def __call__(self, x: np.ndarray, sigma: float, lam: Sequence[float]) -> np.ndarray:
        point = np.concatenate([np.asarray(x, dtype=np.float64).ravel(), [float(sigma)],
                                np.asarray(lam, dtype=np.float64).ravel()])
        return self.kernels.hessian_values(point)
