"""The runtime with Numba's public API only: what the adapter falls back to.

Each function gives the numbers of the lowered one (an ``@njit`` of the same steps is what the
lowering reproduces bit for bit), compiled by Numba's own front end: slower to compile (about
ten times for big kernels), and batches run the row kernel's steps row by row, without lanes.
The claims are not atomic, so a batch must stay on one thread (`ATOMIC` in the package).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from ...lazy_code import unstubbed


def steps_kernel(steps: Callable) -> Callable:
    """``NAME_steps`` compiled as it is (its bytecode: fetched if still a stub)."""
    return njit(error_model="numpy")(unstubbed(steps))


def point_python(steps: Callable) -> Callable:
    """(x, g) -> float: the steps on the point x (a tuple of floats or an array), their
    ``_out[0]`` returned and ``_out[k]`` stored in ``g[k - 1]`` (g None: only the value)."""
    row = steps_kernel(steps)

    def point(x, g):
        out = np.empty(1 if g is None else 1 + g.shape[0])
        row(x, out)
        if g is not None:
            for k in range(g.shape[0]):
                g[k] = out[k + 1]
        return out[0]

    return point


def point_kernel(steps: Callable) -> Callable:
    """`point_python`, compiled."""
    return njit(error_model="numpy")(point_python(steps))


def floats_python(steps: Callable, count: int) -> Callable:
    """x -> (value, (g0, ..., g_{count-1})): the steps on the point x (a tuple of floats),
    their ``_out[0]`` and a tuple of ``_out[1]`` .. ``_out[count]``."""
    from numba.np.unsafe.ndarray import to_fixed_tuple  # (here: a cache hit never needs it)

    row = steps_kernel(steps)

    def floats(x):
        out = np.empty(count + 1)
        row(x, out)
        return out[0], to_fixed_tuple(out[1:], count)

    return floats


def floats_kernel(steps: Callable, count: int) -> Callable:
    """`floats_python`, compiled."""
    return njit(error_model="numpy")(floats_python(steps, count))


def rows_python(steps: Callable, chunk: int) -> Callable:
    """(X, OUT, c) -> None: the steps on each row of chunk c (rows c*chunk .. c*chunk+chunk-1),
    as plain Python over a compiled ``steps``."""
    row = steps_kernel(steps)

    def rows(X, OUT, c):
        for i in range(c * chunk, min(X.shape[0], c * chunk + chunk)):
            row(X[i], OUT[i])

    return rows


def rows_kernel(steps: Callable, chunk: int) -> Callable:
    """`rows_python`, compiled."""
    return njit(error_model="numpy", nogil=True)(rows_python(steps, chunk))


def sums_python(lanes: Callable, slots: int, block: int, chunk: int, width: int
                ) -> Callable:
    """(P, D, ACC, c) -> None: `lanes` on each block of chunk c's rows, then each output
    slot's `block` accumulators added pairwise, neighbours first, into ACC[c] (the order of
    runtime.sums). `lanes` runs compiled: plain Python over Numba's njit."""
    step = njit(error_model="numpy")(unstubbed(lanes))

    def sums(P, D, ACC, c):
        T = np.zeros(max(1, slots))
        A = np.zeros(width * block)
        lo = c * chunk
        hi = min(D[0].shape[0], lo + chunk)
        for s in range(lo, hi, block):
            step(P, *D, T, A, s, min(block, hi - s))
        for k in range(width):
            stride = 1
            while stride < block:
                for j in range(k * block, (k + 1) * block - stride, 2 * stride):
                    A[j] += A[j + stride]
                stride *= 2
            ACC[c, k] = A[k * block]

    return sums


def sums_kernel(lanes: Callable, slots: int, block: int, chunk: int, width: int) -> Callable:
    """`sums_python`, compiled."""
    return njit(error_model="numpy", nogil=True)(sums_python(lanes, slots, block, chunk, width))


def tile() -> Callable:
    """`tiles`' copy of an 8 x 8 tile, as loops."""
    def tile(A, a0, a1, B, b0, b1):
        for r in range(8):
            for c in range(8):
                B[b0 + c, b1 + r] = A[a0 + r, a1 + c]

    return njit(nogil=True)(tile)


def claims() -> tuple[Callable, Callable]:
    """(fetch_add, load_acquire), not atomic: a batch must stay on one thread."""
    def fetch_add(claims, k):
        old = claims[k]
        claims[k] = old + 1
        return old

    def load_acquire(claims, k):
        return claims[k]

    return njit(nogil=True)(fetch_add), njit(nogil=True)(load_acquire)
