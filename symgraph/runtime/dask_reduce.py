"""A function reduced over rows (runtime.reduction) on Dask arrays of data: each chunk of rows
gives its count and sums on a worker (the same generated kernels, shipped as source once per
worker by runtime.dask's `Kernel`), and the chunks' sums are combined pairwise, in a tree of
tasks, into the result of the function's method. Data beyond memory: only one chunk of each
array is in a worker's memory at a time, and what travels back is a row of sums per chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..lower.products import VALUE, VALUE_GRAD, VALUE_GRAD_HESS, VALUE_JAC
from .reduction import pairwise_sum

KINDS = {"value": VALUE, "value_and_grad": VALUE_GRAD, "grad": VALUE_GRAD,
         "hessian": VALUE_GRAD_HESS, "jacobian": VALUE_JAC}


def chunk_sums(kernel: Any, program: str, params: np.ndarray, rows_per_chunk: int, width: int,
               *blocks: np.ndarray) -> np.ndarray:
    """[rows, sums...] of one chunk of the data (this runs on the workers)."""
    arrays = [np.ascontiguousarray(b, dtype=np.float64).reshape(b.shape[0], -1) for b in blocks]
    rows = arrays[0].shape[0]
    chunks = -(-rows // rows_per_chunk)
    acc = np.empty((chunks, width))
    if rows:
        getattr(kernel.load(), program + "_reduce")(params, *arrays, acc, 0, chunks)
    return np.concatenate([[float(rows)], pairwise_sum(acc)])


def chunk_rows(kernel: Any, program: str, params: np.ndarray, width: int,
               *blocks: np.ndarray) -> np.ndarray:
    """Every row's output slots of one chunk of the data (on the workers)."""
    arrays = [np.ascontiguousarray(b, dtype=np.float64).reshape(b.shape[0], -1) for b in blocks]
    out = np.empty((arrays[0].shape[0], width))
    if out.shape[0]:
        getattr(kernel.load(), program + "_rows")(params, *arrays, out)
    return out


def _combine(parts: Sequence[Any]) -> Any:
    import dask

    add = dask.delayed(np.add, pure=True)
    parts = list(parts)
    while len(parts) > 1:  # pairwise, in a fixed order: ((p0 + p1) + (p2 + p3)) + ...
        parts = [add(a, b) for a, b in zip(parts[::2], parts[1::2])] + (
            parts[-1:] if len(parts) % 2 else [])
    return parts[0]


def map_reduced(fn: Any, data: Any, kind: str, params: Any, kernel: Any) -> Any:
    """`fn.<kind>(params, *data)` for Dask arrays `data`, as a Delayed (or, per row, a Dask
    array)."""
    import dask
    import dask.array as da

    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; choose one of {sorted(KINDS)}")
    if params is None:
        raise ValueError("a function reduced over rows needs params= (the parameters' values)")
    if kind == "hessian" and not fn.has_hessian:
        raise ValueError("compile with hessian=True to map its Hessian over Dask chunks")
    product = fn._program(KINDS[kind])
    program = fn.programs[fn.products.index(product)]
    width = len(program.outputs)
    arrays = [da.asarray(d) for d in (data if isinstance(data, (list, tuple)) else [data])]
    if len(arrays) != fn.layout.n_data:
        raise ValueError(f"expected {fn.layout.n_data} data array(s), got {len(arrays)}")
    for g, (a, shape) in enumerate(zip(arrays, fn.row_shapes)):
        if a.shape[1:] != shape:
            raise ValueError(f"data array {g} must have rows of shape {shape}, got {a.shape}")
    p, _ = fn.prepare(params, [np.zeros((0, *s)) for s in fn.row_shapes])
    rows = arrays[0].chunks[0]
    # Every data array cut into the first one's row chunks, and its row in one chunk.
    arrays = [a.rechunk({0: rows, **{i: -1 for i in range(1, a.ndim)}}) for a in arrays]
    shipped = dask.delayed(kernel, name=f"symgraph-kernel-{kernel.key}", pure=True)
    blocks = [a.to_delayed().reshape(len(rows), -1)[:, 0] for a in arrays]
    if fn.reduce is None:
        pieces = [da.from_delayed(dask.delayed(chunk_rows, pure=True)(
            shipped, product.name, p, width, *(b[i] for b in blocks)), (n, width), np.float64)
            for i, n in enumerate(rows)]
        out = da.concatenate(pieces)
        return _finish_rows(fn, kind, out)
    sums = [dask.delayed(chunk_sums, pure=True)(shipped, product.name, p, fn.rows_per_chunk,
                                                width, *(b[i] for b in blocks))
            for i in range(len(rows))]
    return dask.delayed(_finish, pure=True)(fn.reduce, fn.scalar, kind, fn._m, fn._k,
                                            _combine(sums))


def _finish(reduce: str, scalar: bool, kind: str, m: int, k: int, total: np.ndarray) -> Any:
    count, out = total[0], total[1:]
    if reduce == "mean":
        out = out / count
    if kind == "value":
        return out.item(0) if scalar else out[:m]
    if kind == "value_and_grad":
        return out.item(0), out[1:1 + k]
    if kind == "grad":
        return out[1:1 + k]
    if kind == "hessian":
        return out[1 + k:].reshape(k, k)
    return out[m:].reshape(m, k) if not scalar else out[1:1 + k].reshape(1, k)


def _finish_rows(fn: Any, kind: str, out: Any) -> Any:
    m, k = fn._m, fn._k
    if kind == "value":
        return out[:, 0] if fn.scalar else out[:, :m]
    if kind == "value_and_grad":
        return out[:, 0], out[:, 1:1 + k]
    if kind == "grad":
        return out[:, 1:1 + k]
    if kind == "hessian":
        return out[:, 1 + k:].reshape((out.shape[0], k, k))
    return out[:, m:].reshape((out.shape[0], m, k)) if not fn.scalar else \
        out[:, 1:1 + k].reshape((out.shape[0], 1, k))
