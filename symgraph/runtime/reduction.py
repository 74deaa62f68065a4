"""A batch axis that is a loop: ``compile(f, params, data=[x, y], reduce="mean")``.

`f` is written for one row of data (``(W*x + b - y)**2`` with scalar ``x`` and ``y``); the
compiled function takes the parameters' values and one array per data argument, and gives the
reduction of `f` over the rows (``"sum"`` or ``"mean"``; ``None``: every row's value) and its
derivatives w.r.t. the parameters, in one pass over the rows:

    >>> fn = sg.compile((W*x + b - y)**2, [W, b], data=[x, y], reduce="mean")
    >>> loss, (dW, db) = fn.value_and_grad([2.0, 1.0], xs, ys)     # xs, ys: (N,) arrays
    >>> fn.hessian([2.0, 1.0], xs, ys)                             # (2, 2)

The kernel (backends.reduce) is the row program in a loop: its size and compile time do not
depend on N, and the data are read where they are (no copy for C-contiguous float64 arrays).
Rows are cut into fixed chunks whose sums the threads compute (worker threads of
runtime.batching take ranges of chunks; the kernels release the GIL; ``numba.set_num_threads``
sets how many); the chunks' sums are then added pairwise here, so the result is the same bits
for any number of threads.
A data argument is a symbol (one number per row: an (N,) array) or a sequence or array of
symbols (a row of several: an (N, *shape) array). `map_dask` (runtime.dask) runs the same
kernels on a Dask array's chunks and combines their sums the same way.
"""

from __future__ import annotations

import os
import queue
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backends.numba.cache import Entry
from ..backends.reduce import REDUCE_EMITTERS
from ..frontends.coerce import as_expression, as_symbols
from ..ir.node import Node
from ..lower.products import VALUE, VALUE_GRAD, VALUE_GRAD_HESS, VALUE_JAC, Product
from ..lower.reduce import RowLayout, reduce_programs
from ..version import __version__
from .batching import _inboxes
from .loading import load_source

REDUCTIONS = ("sum", "mean", None)
MIN_CHUNKS_PER_THREAD = 4  # a thread's share is worth its hand-off (~15 us) past ~16k rows
PARTS_PER_THREAD = 4  # a thread held up by another process leaves its later parts to others


def threads_for(backend: str, parts: int) -> int:
    """Numba's thread setting for a Numba kernel (one thread for NumPy's), at most one per
    `MIN_CHUNKS_PER_THREAD` parts."""
    if backend != "numba" or parts < 2 * MIN_CHUNKS_PER_THREAD:
        return 1
    from .batching import numba_threads  # (without starting Numba's threading layer)

    return max(1, min(numba_threads(), parts // MIN_CHUNKS_PER_THREAD))


def run_parts(task: Any, count: int, threads: int) -> None:
    """``task(a, b)`` over ``[0, count)`` cut into parts, which the caller and ``threads - 1``
    workers take in turn. What each part computes does not depend on who runs it."""
    if threads <= 1:
        task(0, count)
        return
    pieces = min(count, threads * PARTS_PER_THREAD)
    bounds = [count * k // pieces for k in range(pieces + 1)]
    parts: queue.SimpleQueue = queue.SimpleQueue()
    for a, b in zip(bounds[:-1], bounds[1:]):
        parts.put((a, b))

    def take() -> None:
        while True:
            try:
                a, b = parts.get_nowait()
            except queue.Empty:
                return
            task(a, b)

    done: queue.SimpleQueue = queue.SimpleQueue()
    for inbox in _inboxes(threads - 1):
        inbox.put((take, done))
    try:
        take()
    finally:
        errors = [done.get() for _ in range(threads - 1)]
    for error in errors:
        if error is not None:
            raise error


def pairwise_sum(partials: np.ndarray) -> np.ndarray:
    """The rows of `partials` (chunks by slots) added pairwise, in an order fixed by their
    number: ((c0 + c1) + (c2 + c3)) + ...; an empty array sums to zeros."""
    acc = np.asarray(partials, dtype=np.float64)
    if acc.shape[0] == 0:
        return np.zeros(acc.shape[1:])
    while acc.shape[0] > 1:
        half = acc.shape[0] // 2
        paired = acc[:2 * half:2] + acc[1:2 * half:2]
        acc = np.concatenate([paired, acc[2 * half:]]) if acc.shape[0] % 2 else paired
    return acc[0]


def _group(entry: Any, index: int) -> tuple[list[Node], tuple[int, ...]]:
    """A data argument's symbols (row-major) and the shape of one row."""
    if isinstance(entry, (Node, str)):
        return as_symbols([entry], [], f"data[{index}]"), ()
    array = np.asarray(entry, dtype=object)
    if array.size == 0:
        raise ValueError(f"data[{index}] has no symbols")
    return as_symbols(list(array.flat), [], f"data[{index}]"), array.shape


class ReducedFunction:
    """Kernels for a per-row expression reduced over the rows of data arrays (module doc).

    ``fn(params, *data)`` is the reduction's value; ``value_and_grad``, ``grad``, ``hessian``
    (scalar `expr`) and ``jacobian`` (a list of expressions) its derivatives w.r.t. the
    parameters. With ``reduce=None`` every result has one row per data row.
    """

    is_reduction = True  # runtime.dask runs these by chunks of rows

    def __init__(self, expr: Any, args: Any, data: Sequence[Any], *, reduce: str | None = "sum",
                 wrt: Any = None, backend: str = "numba", hessian: bool = False,
                 cache_dir: str | os.PathLike | None = None, dtype: Any = np.float64) -> None:
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float64, np.float32) or (
                self.dtype == np.float32 and backend != "python"):
            raise ValueError("dtype is float64, or float32 with the Python backend (NumPy's "
                             f"float32 operations, step by step), got {dtype!r} with {backend!r}")
        if reduce not in REDUCTIONS:
            raise ValueError(f"reduce must be one of {REDUCTIONS}, got {reduce!r}")
        if backend not in REDUCE_EMITTERS:
            raise ValueError(f"unknown backend {backend!r}; choose one of "
                             f"{sorted(REDUCE_EMITTERS)}")
        if isinstance(data, (Node, str)) or not isinstance(data, Sequence) or not data:
            raise ValueError("data must be a non-empty list of the row's data symbols (one "
                             "entry per data array)")
        self.scalar = not isinstance(expr, (list, tuple))
        self.outputs = [as_expression(e) for e in ([expr] if self.scalar else expr)]
        self.args = as_symbols(args, self.outputs, "parameters")
        self._data_spec = list(data)
        groups = [_group(entry, i) for i, entry in enumerate(data)]
        self.data = [g for g, _ in groups]
        self.row_shapes = [shape for _, shape in groups]
        taken = set(self.args)
        seen: set[Node] = set()
        for g, group in enumerate(self.data):
            for s in group:
                if s in taken or s in seen:
                    raise ValueError(f"data[{g}]'s symbol {s.value!r} is also a parameter or "
                                     "another data symbol")
                seen.add(s)
        self.wrt = self.args if wrt is None else as_symbols(wrt, self.outputs, "wrt")
        missing = [w.value for w in self.wrt if w not in taken]
        if missing:
            raise ValueError(f"wrt names {missing}, which are not among the parameters")
        self.reduce, self.backend, self.cache_dir = reduce, backend, cache_dir
        self.has_hessian = hessian and self.scalar
        if not self.wrt:
            self.products: list[Product] = [VALUE]
        elif self.scalar:
            self.products = [VALUE, VALUE_GRAD] + [VALUE_GRAD_HESS] * self.has_hessian
        else:
            self.products = [VALUE, VALUE_JAC]
        self.programs, self.layout = reduce_programs(self.outputs, self.args, self.data,
                                                     self.wrt, self.products)
        names = ", ".join(s.value for s in self.args)
        # The reduction is the caller's (sum, mean, rows): one module serves all three.
        title = (f"Rows of {len(self.outputs)} output(s) of ({names}; data "
                 f"{', '.join(str(len(g)) for g in self.data)} column(s)), summed or one by one")
        self.source = REDUCE_EMITTERS[backend](self.programs, self.layout, title, __version__)
        self.module, self.path = load_source(self.source, cache_dir)
        self.rows_per_chunk = int(self.module.ROWS_PER_CHUNK)
        self._m, self._k = len(self.outputs), len(self.wrt)
        self._hessian_function: ReducedFunction | None = None
        self._kernels: dict[str, Any] = {}

    # -- inputs ---------------------------------------------------------------------------------
    def prepare(self, params: Any, data: Sequence[Any]) -> tuple[np.ndarray, list[np.ndarray]]:
        """The parameter vector and each data array as (N, columns) float64, C order (views
        where the arrays allow)."""
        p = np.ascontiguousarray(params, dtype=self.dtype).reshape(-1)
        if p.size != len(self.args):
            raise ValueError(f"expected {len(self.args)} parameter value(s) for "
                             f"{[s.value for s in self.args]}, got {p.size}")
        if len(data) != self.layout.n_data:
            raise ValueError(f"expected {self.layout.n_data} data array(s), got {len(data)}")
        arrays, rows = [], None
        for g, (value, shape) in enumerate(zip(data, self.row_shapes)):
            a = np.asarray(value, dtype=self.dtype)
            if a.shape[1:] != shape or a.ndim != len(shape) + 1:
                raise ValueError(f"data array {g} must have shape (N, {', '.join(map(str, shape))})"
                                 .replace(", )", ")") + f" (one row per data row), got {a.shape}")
            if rows is None:
                rows = a.shape[0]
            elif a.shape[0] != rows:
                raise ValueError(f"data array {g} has {a.shape[0]} rows, data array 0 has {rows}")
            arrays.append(np.ascontiguousarray(a.reshape(a.shape[0], len(self.data[g]))))
        return p, arrays

    def _program(self, product: Product) -> Product:
        if product not in self.products:
            if not self.wrt:
                return VALUE
            raise TypeError(f"{product.about} need(s) a "
                            f"{'scalar' if product.scalar_only else 'vector'} expression")
        return product

    def _kernel(self, name: str, width: int) -> Any:
        """The module's function `name` (``value_reduce``...); a Numba one through its entry
        point (backends.numba.cache: loaded from the cache without Numba's per-process set-up,
        called without its type resolution) for the types `prepare` gives."""
        kernel = self._kernels.get(name)
        if kernel is None:
            kernel = getattr(self.module, name)
            if self.backend == "numba":
                data = [np.empty((0, len(g))) for g in self.data]
                tail = (0, 0) if name.endswith("_reduce") else ()
                kernel = Entry(kernel, (np.empty(0), *data, np.empty((0, width)), *tail))
            self._kernels[name] = kernel
        return kernel

    def sums(self, product: Product, p: np.ndarray, arrays: list[np.ndarray]) -> np.ndarray:
        """`product`'s output slots summed over the rows (prepared inputs)."""
        rows = arrays[0].shape[0]
        width = len(self.programs[self.products.index(product)].outputs)
        chunks = -(-rows // self.rows_per_chunk)
        acc = np.empty((chunks, width))
        if rows:
            kernel = self._kernel(product.name + "_reduce", width)
            run_parts(lambda a, b: kernel(p, *arrays, acc, a, b), chunks,
                      threads_for(self.backend, chunks))
        return pairwise_sum(acc)

    def _reduced(self, product: Product, params: Any, data: Sequence[Any]) -> np.ndarray:
        product = self._program(product)
        p, arrays = self.prepare(params, data)
        rows = arrays[0].shape[0]
        if self.reduce is None:
            width = len(self.programs[self.products.index(product)].outputs)
            out = np.empty((rows, width))
            if rows:
                kernel = self._kernel(product.name + "_rows", width)
                run_parts(lambda a, b: kernel(p, *[d[a:b] for d in arrays], out[a:b]), rows,
                          threads_for(self.backend, rows // self.rows_per_chunk))
            return out
        total = self.sums(product, p, arrays)
        return total / rows if self.reduce == "mean" else total

    # -- results --------------------------------------------------------------------------------
    def __call__(self, params: Any, *data: Any) -> Any:
        out = self._reduced(VALUE, params, data)[..., :self._m]
        return (out[..., 0] if self.reduce is None else out.item(0)) if self.scalar else out

    def value_and_grad(self, params: Any, *data: Any) -> tuple[Any, np.ndarray]:
        """The reduction's value and gradient w.r.t. the parameters, from one pass."""
        self._require_scalar("value_and_grad")
        out = self._reduced(VALUE_GRAD, params, data)
        value = out[..., 0] if self.reduce is None else out.item(0)
        return value, out[..., 1:1 + self._k]

    def grad(self, params: Any, *data: Any) -> np.ndarray:
        return self.value_and_grad(params, *data)[1]

    def jacobian(self, params: Any, *data: Any) -> np.ndarray:
        """(outputs, parameters), or per row (N, outputs, parameters) with reduce=None."""
        if self.scalar:
            return self.grad(params, *data)[..., None, :]
        out = self._reduced(VALUE_JAC, params, data)
        return out[..., self._m:].reshape(out.shape[:-1] + (self._m, self._k))

    def hessian(self, params: Any, *data: Any) -> np.ndarray:
        """(parameters, parameters), or per row (N, k, k) with reduce=None."""
        self._require_scalar("hessian")
        if not self.has_hessian:
            if self._hessian_function is None:  # built on first use, then kept
                self._hessian_function = ReducedFunction(
                    self.outputs[0], self.args, self._data_spec, reduce=self.reduce,
                    wrt=self.wrt, backend=self.backend, hessian=True, cache_dir=self.cache_dir,
                    dtype=self.dtype)
            return self._hessian_function.hessian(params, *data)
        out = self._reduced(VALUE_GRAD_HESS, params, data)
        return out[..., 1 + self._k:].reshape(out.shape[:-1] + (self._k, self._k))

    def _require_scalar(self, what: str) -> None:
        if not self.scalar:
            raise TypeError(f"{what} needs a scalar expression; use jacobian for a vector")

    def __repr__(self) -> str:
        names = ", ".join(a.value for a in self.args)
        return (f"<ReducedFunction ({names}) {self.reduce or 'per-row'} over rows, "
                f"{self.backend}: {self.path}>")


def compile_reduced(expr: Any, args: Any, data: Sequence[Any], **options: Any
                    ) -> ReducedFunction:
    """`ReducedFunction` (the API's ``compile(..., data=...)``)."""
    return ReducedFunction(expr, args, data, **options)


__all__ = ["ReducedFunction", "RowLayout", "compile_reduced", "pairwise_sum", "REDUCTIONS"]
