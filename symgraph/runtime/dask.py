"""Evaluate a compiled function over a Dask array, chunk by chunk, on any Dask scheduler.

    import dask.array as da
    from symgraph.runtime.dask import map_dask

    X = da.from_zarr(...)                       # (N, n) points, any row chunks
    values, grads = map_dask(fn, X, "value_and_grad")
    values.compute()                            # or dask.compute(values, grads)

Workers never see expression objects. What travels is the kernel itself, once per worker: a
generated module's source text (the worker imports it with `loading.load_source`, so it lands
in the worker's own cache folder and Numba's machine-code cache applies there), or a tape
module's arrays. Each worker process loads a kernel once and keeps it, keyed by digest.
Needs the optional extra: ``pip install "symgraph[dask]"``.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends.registry import backend_named
from ..backends.tape.builder import Tape, TapeModule
from ..lower.products import VALUE, VALUE_GRAD, VALUE_GRAD_HESS, VALUE_JAC, Product
from .loading import load_source, source_digest

# kind (the API method's name) -> the product whose program it runs
KINDS: dict[str, Product] = {"value": VALUE, "value_and_grad": VALUE_GRAD, "grad": VALUE_GRAD,
                             "jacobian": VALUE_JAC, "hessian": VALUE_GRAD_HESS}

_LOADED: dict[str, Any] = {}  # per worker process: kernel key -> module
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Kernel:
    """What a worker needs to run a compiled function: its source, or its tapes, or both (a
    source whose batches of some programs run on the tape's lanes, as the API chose)."""

    key: str
    source: str | None = None
    tapes: tuple[Tape, ...] = ()
    backend: str = "numba"  # whose `load` readies the source's kernels

    def load(self) -> Any:
        """The module, loaded once per process (the source goes to this process's cache)."""
        with _LOCK:
            module = _LOADED.get(self.key)
            if module is None:
                if self.source is None:
                    module = TapeModule(self.tapes)
                else:
                    module = load_source(self.source)[0]
                    backend_named(self.backend).load(module)
                    if self.tapes:
                        module = _TapeBatches(module, TapeModule(self.tapes))
                _LOADED[self.key] = module
            return module


class _TapeBatches:
    """A generated module whose ``<program>_batch`` comes from the tapes where they have it."""

    def __init__(self, module: Any, tapes: TapeModule) -> None:
        self.module, self.tapes = module, tapes

    def __getattr__(self, name: str) -> Any:
        if name.endswith("_batch") and name[:-len("_batch")] in self.tapes.tapes:
            return getattr(self.tapes, name)
        return getattr(self.module, name)


def _tapes_key(tapes: tuple[Tape, ...]) -> str:
    digest = hashlib.sha256()
    for tape in tapes:
        digest.update(tape.name.encode() + b"\0" + str(tape.n_registers).encode())
        for array in (tape.opcodes, tape.operands, tape.targets, tape.blocks, tape.constants,
                      tape.outputs):
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:24]


def kernel_of(fn: Any) -> Kernel:
    """The shippable kernel of a CompiledFunction-like object (``.module``, ``.source``)."""
    module = fn.module
    if isinstance(module, TapeModule):
        tapes = tuple(t.stripped() for t in module.tapes.values())
        return Kernel("tape-" + _tapes_key(tapes), tapes=tapes)
    batch_tapes = getattr(fn, "batch_tapes", None)  # programs whose batches run on the tape
    tapes = tuple(t.stripped() for t in batch_tapes.tapes.values()) if batch_tapes else ()
    key = "source-" + source_digest(fn.source) + ("-" + _tapes_key(tapes) if tapes else "")
    return Kernel(key, source=fn.source, tapes=tapes, backend=getattr(fn, "backend", "numba"))


def run_block(block: np.ndarray, kernel: Kernel, program: str, width: int) -> np.ndarray:
    """One chunk of rows through `program`'s batch kernel (this runs on the workers)."""
    X = np.ascontiguousarray(block, dtype=np.float64)
    out = np.empty((X.shape[0], width))
    if X.shape[0]:
        getattr(kernel.load(), f"{program}_batch")(X, out)
    return out


def _program(fn: Any, name: str):
    for p in fn.programs:
        if p.name == name:
            return p
    hint = " (compile with hessian=True)" if name == VALUE_GRAD_HESS.name else ""
    raise ValueError(f"the compiled function has no {name!r} kernel{hint}; it has "
                     f"{[p.name for p in fn.programs]}")


def map_program(fn: Any, X: Any, program: str) -> Any:
    """``OUT`` of one kernel as a Dask array (N, outputs), computed chunk by chunk.

    Rows keep `X`'s row chunks; the columns (one point each row) are made a single chunk.
    """
    import dask
    import dask.array as da

    width = len(_program(fn, program).outputs)
    X = da.asarray(X)
    if X.ndim != 2 or X.shape[1] != len(_program(fn, "value").inputs):
        raise ValueError(f"expected points as rows of shape (N, "
                         f"{len(_program(fn, 'value').inputs)}), got {X.shape}")
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    kernel = kernel_of(fn)
    # One graph key holds the kernel, so it travels to each worker once, not once per chunk.
    shipped = dask.delayed(kernel, name=f"symgraph-kernel-{kernel.key}", pure=True)
    return da.map_blocks(run_block, X, shipped, program=program, width=width,
                         chunks=(X.chunks[0], (width,)), dtype=np.float64,
                         name=f"symgraph-{program}-{kernel.key}")


def map_dask(fn: Any, X: Any, kind: str = "value", params: Any = None) -> Any:
    """`fn`'s values or derivatives at the rows of the Dask array `X`, lazily.

    kind: ``"value"`` -> (N,) for a scalar function, (N, m) for a vector one;
    ``"value_and_grad"`` -> ((N,), (N, k)); ``"grad"`` -> (N, k); ``"jacobian"`` -> (N, m, k);
    ``"hessian"`` -> (N, k, k); or a kernel's name (``"value_grad"``...) -> its raw (N, width).

    For a function reduced over rows (``compile(..., data=...)``: runtime.reduction), `X` is
    its data arrays (a Dask array, or a list of them, one per data argument) and `params` the
    parameters' values; the result is a Delayed of what the function's `kind` method returns
    (runtime.dask_reduce: every chunk's sums, combined pairwise).
    """
    if getattr(fn, "is_reduction", False):
        from .dask_reduce import map_reduced

        return map_reduced(fn, X, kind, params, kernel_of(fn))
    names = {p.name for p in fn.programs}
    if kind in names and kind not in KINDS:
        return map_program(fn, X, kind)
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; choose one of {sorted(KINDS)} or a kernel "
                         f"name in {sorted(names)}")
    m = len(_program(fn, "value").outputs)
    scalar = getattr(fn, "scalar", VALUE_JAC.name not in names)
    if kind == "jacobian" and scalar:
        return map_dask(fn, X, "grad")[:, None, :]
    product = KINDS[kind]
    if product.scalar_only and not scalar:
        raise TypeError(f"{kind} needs a scalar function; use jacobian for a vector")
    out = map_program(fn, X, product.name)
    if kind == "value":
        return out[:, 0] if scalar else out
    if kind == "value_and_grad":
        return out[:, 0], out[:, 1:]
    derivative = _program(fn, VALUE_GRAD.name if scalar else VALUE_JAC.name)
    k = (len(derivative.outputs) - m) // m  # the variables: derivatives per output
    start, shape = product.part(m, k)
    return out[:, start:].reshape((out.shape[0], *shape))
