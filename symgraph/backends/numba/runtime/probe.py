"""Tiny kernels that the runtime adapter compiles through the lowering, and compares with plain
``@njit`` (rows) and NumPy (lanes), before it trusts the lowering with a generated module's
kernels (`check`).

Its steps are in the syntax of the op table's Numba templates (arithmetic, a division by
zero, powers, selects, comparisons, libm and NumPy calls, ``max(*...)``), its lane function in
that of lane kernels (segments, a slot of ``_T``, the flags ``_F``, vecmath's selects and bit
casts; not its fix-up loop, which lowers steps as a row kernel does, nor vecmath's functions,
which cost ~0.4 s each through plain ``@njit``). Compiling the three kernels takes ~0.6 s, so
the adapter runs the probe once per runtime, Numba and llvmlite, and remembers its verdict.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..vecmath import _bits, _float, _where
from . import fetch_add, lane_loops, load_acquire, straight_line

# Rows of (x, y): edges (zeros, a pole at y = 1, inf, nan, huge, tiny, negative).
POINTS = np.array([[0.5, 1.5], [-0.0, 1.0], [2.0, -1.0], [1e300, 1e-310], [np.inf, 3.0],
                   [np.nan, 0.25], [-7.25, np.inf], [6e7, 2.0], [0.0, 0.0], [-3.5, -2.0]] * 7)
BLOCK, CHUNK = 8, 24  # blocks of a chunk, the last one partial


def probe_steps(_x, _out):
    x = _x[0]
    y = _x[1]
    t0 = x * y
    t1 = t0 / (y - 1.0)
    t2 = math.exp(-x) + x ** 3.0 - y * y * y
    t3 = (t1 if t1 >= t2 or t1 != t1 else t2)
    t4 = (1.0 if x < y else 0.0) + (y if x != 0.0 else -x)
    t5 = abs(t3) + np.floor(t2) + max(x, y, t4)
    _out[0] = t5
    _out[1] = t1
    _out[2] = math.sin(x) ** y


def probe_lanes(_X, _OUT, _T, _F, _s, _m):
    for _j in range(_m):
        _F[_j] = False
    for _j in range(_m):
        x = _X[_s + _j, 0]
        y = _X[_s + _j, 1]
        t0 = _where(x > y, x * y, y - x) / _float((_bits(y) >> 1) + 2 ** 61)
        _T[0 + _j] = t0 + abs(x)
        _F[_j] |= abs(x) > 50000000.0
    for _j in range(_m):
        t1 = _T[0 + _j]
        _OUT[_s + _j, 0] = t1 / _X[_s + _j, 1]
        _OUT[_s + _j, 1] = (1.0 if _F[_j] else 0.0)
        _OUT[_s + _j, 2] = t1


_steps = straight_line(probe_steps)
_lanes = lane_loops(probe_lanes, probe_steps, slots=BLOCK, block=BLOCK, chunk=CHUNK,
                    widths={"_X": 2})


@njit(error_model="numpy")
def lowered_row(x, out):
    _steps(x, out)


@njit(error_model="numpy")
def lowered_chunks(X, OUT, claims):
    c = fetch_add(claims, 0)
    while c < (X.shape[0] + CHUNK - 1) // CHUNK:
        _lanes(X, OUT, c)
        c = fetch_add(claims, 0)
    return load_acquire(claims, 0)


plain_row = njit(error_model="numpy")(probe_steps)


def numpy_lanes(X):
    """What probe_lanes computes, with NumPy: the same IEEE operations."""
    x, y = X[:, 0], X[:, 1]
    with np.errstate(all="ignore"):
        scale = ((y.view(np.int64) >> 1) + 2 ** 61).view(np.float64)
        t1 = np.where(x > y, x * y, y - x) / scale + np.abs(x)
        return np.stack([t1 / y, (np.abs(x) > 50000000.0).astype(np.float64), t1], axis=1)


def _same(a, b):
    """Equal bit for bit, or both NaN (NumPy and LLVM may keep different NaN payloads)."""
    return bool(np.all((a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b))))


def problem() -> str | None:
    """What differs between the probe kernels lowered by the runtime and their references."""
    ours, want = np.zeros((len(POINTS), 3)), np.zeros((len(POINTS), 3))
    for i in range(len(POINTS)):
        lowered_row(POINTS[i], ours[i])
        plain_row(POINTS[i], want[i])
    if not np.array_equal(ours.view(np.int64), want.view(np.int64)):
        return "a row kernel's numbers differ"
    ours = np.zeros((len(POINTS), 3))
    claimed = lowered_chunks(POINTS, ours, np.zeros(1, np.int64))
    if not _same(ours, numpy_lanes(POINTS)):
        return "a lane kernel's numbers differ"
    if claimed != (len(POINTS) + CHUNK - 1) // CHUNK + 1:
        return "the claims miscount"
    return None
