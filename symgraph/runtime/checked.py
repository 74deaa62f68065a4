"""The raw kernels `CompiledFunction.kernels` hands out, with their arguments checked.

A generated row kernel trusts its caller (the API's own calls are checked once, upstream): a
short ``out`` is written past its end, a short ``x`` read past its end, and a read-only array
written, since the compiled code addresses memory directly. The kernels given to users go
through these wrappers instead: a few attribute checks (well under a microsecond), then the
kernel. ``.unchecked`` is the kernel itself, for callers that guarantee the sizes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Kernel = Callable[[np.ndarray, np.ndarray], None]


def _refuse(kernel: str, argument: str, value: Any, wanted: str) -> None:
    if not isinstance(value, np.ndarray):
        got = f"a {type(value).__name__}"
    elif (not value.flags.writeable and argument.startswith(("out", "OUT"))
          and value.dtype.kind == "f"):
        got = "a read-only array"
    else:
        got = f"an array of shape {value.shape} and dtype {value.dtype}"
    raise ValueError(f"{kernel}: {argument} must be {wanted}; got {got}")


def checked_row(kernel: Kernel, name: str, n: int, m: int) -> Kernel:
    """`kernel(x, out)` for x of shape (n,) and a writeable out of shape (m,)."""
    ndarray = np.ndarray

    def row(x: np.ndarray, out: np.ndarray) -> None:
        if not (isinstance(x, ndarray) and x.shape == (n,) and x.dtype.kind == "f"):
            _refuse(f"{name} row kernel", "x", x, f"a float array of shape ({n},)")
        if not (isinstance(out, ndarray) and out.shape == (m,) and out.dtype.kind == "f"
                and out.flags.writeable):
            _refuse(f"{name} row kernel", "out", out,
                    f"a writeable float array of shape ({m},)")
        kernel(x, out)

    row.unchecked = kernel  # type: ignore[attr-defined]
    row.__name__ = row.__qualname__ = f"{name}_row"
    return row


def checked_batch(kernel: Kernel, name: str, n: int, m: int) -> Kernel:
    """`kernel(X, OUT)` for X of shape (N, n) and a writeable OUT of shape (N, m)."""
    ndarray = np.ndarray

    def batch(X: np.ndarray, OUT: np.ndarray) -> None:  # noqa: N803 - the kernels' names
        if not (isinstance(X, ndarray) and X.ndim == 2 and X.shape[1] == n
                and X.dtype == np.float64 and X.flags.c_contiguous):
            _refuse(f"{name} batch kernel", "X", X,
                    f"a C-contiguous float64 array of shape (N, {n})")
        rows = X.shape[0]
        if not (isinstance(OUT, ndarray) and OUT.shape == (rows, m) and OUT.dtype == np.float64
                and OUT.flags.c_contiguous and OUT.flags.writeable):
            _refuse(f"{name} batch kernel", "OUT", OUT,
                    f"a writeable C-contiguous float64 array of shape ({rows}, {m})")
        if np.may_share_memory(X, OUT):
            raise ValueError(f"{name} batch kernel: X and OUT must not overlap")
        kernel(X, OUT)

    batch.unchecked = kernel  # type: ignore[attr-defined]
    batch.__name__ = batch.__qualname__ = f"{name}_batch"
    return batch


def fill_gradient(out: Any, gradient: np.ndarray, method: str, names: list[str]) -> None:
    """`gradient` copied into `out`, a preallocated writeable float64 array of its shape
    (``fn.value_and_grad(x, y, out=g)``); ValueError saying what `out` must be otherwise."""
    if not (isinstance(out, np.ndarray) and out.shape == gradient.shape
            and out.dtype == np.float64 and out.flags.writeable):
        hint = (" (out= takes the gradient's array: give the variable named 'out' by position)"
                if "out" in names and not isinstance(out, np.ndarray) else "")
        _refuse(method, "out", out,
                f"a writeable float64 array of shape {gradient.shape}, the gradient's{hint}")
    copy_rows(out, gradient)


def copy_rows(out: np.ndarray, rows: np.ndarray) -> None:
    """``out[...] = rows`` for arrays of one shape, a batch's gradient (``OUT[:, 1:]``, each
    row a contiguous run of k floats) into a C-contiguous `out` as k-float items: NumPy's
    2-D copy steps through every short row (~5 ns a row, for k of 2 to 16: 92 us at 20,000
    points of 4 derivatives, more than fpu_chain@1's kernel); a copy of 20,000 items of
    32 bytes takes 49. Anything else is copied as NumPy copies it."""
    k = rows.shape[-1] if rows.ndim == 2 else 0
    if (k > 1 and rows.strides[1] == 8 and out.flags.c_contiguous and rows.dtype == out.dtype
            and not np.may_share_memory(out, rows)):
        item = np.dtype((np.void, 8 * k))
        out.view(item)[...] = rows.view(item)  # (shape (N, 1) each: a row an item)
    else:
        out[...] = rows
