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


def steps_kernel(steps: Callable) -> Callable:
    """``NAME_steps`` compiled as it is."""
    return njit(error_model="numpy")(steps)


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


def claims() -> tuple[Callable, Callable]:
    """(fetch_add, load_acquire), not atomic: a batch must stay on one thread."""
    def fetch_add(claims, k):
        old = claims[k]
        claims[k] = old + 1
        return old

    def load_acquire(claims, k):
        return claims[k]

    return njit(nogil=True)(fetch_add), njit(nogil=True)(load_acquire)
