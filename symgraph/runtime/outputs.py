"""Output arrays for batches, from recycled blocks of memory.

A batch's output is written once, and a fresh NumPy array of 80 MB (100,000 points of value and
100 derivatives) makes the OS map and zero every page on that first write: ~6-10 ms, a third of
a Rosenbrock-100 batch. Callers evaluating batch after batch drop each result before the next,
so the block behind a dropped result is kept (up to `MAX_IDLE_BYTES` in all) and the next batch
of about its size writes into pages already mapped.

A result's memory is recycled only when nothing refers to it any more: the array (and every
view of it) holds a `_Lease`, whose release, when the last reference goes, hands the block back.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np

# Smaller arrays come from NumPy's allocator: glibc serves them from its heap, reused without
# page faults once its mmap threshold has adapted (it rises up to 32 MB), and pooling them only
# adds the lease's ~10 us (measured: a 1.6 MB polynomial batch 0.65 -> 1.0 ns a point).
MIN_BYTES = 32 << 20
MAX_IDLE_BYTES = 512 << 20  # kept for reuse at most; a bigger block is never kept
# Arrays of at least this many bytes start on a cache line (NumPy's start 16 bytes past one),
# so that a lane kernel writes their rows as whole lines, non-temporally from
# backends.numba.runtime.transpose's STREAM_BYTES on (the same figure: a batch's output).
ALIGNED_BYTES = 1 << 20
LINE = 64

_idle: list[np.ndarray] = []  # blocks (uint8) no result refers to, most recently freed last
_lock = threading.RLock()  # re-entrant: a lease may be freed by a collection inside it


def _unlock_in_child() -> None:  # a fork from another thread may have copied _lock held
    global _lock
    _lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_unlock_in_child)


class _Lease:
    """The base of an output array: exposes part of a block and hands it back when freed."""

    __slots__ = ("__array_interface__", "block")

    def __init__(self, block: np.ndarray, shape: tuple[int, ...]) -> None:
        self.block = block
        address = block.ctypes.data
        start = address + -address % LINE  # (the block has LINE to spare)
        self.__array_interface__ = {"shape": shape, "typestr": "<f8", "version": 3,
                                    "data": (start, False)}

    def __del__(self) -> None:
        _give_back(self.block)


def _give_back(block: np.ndarray) -> None:
    if block.nbytes > MAX_IDLE_BYTES:
        return
    with _lock:
        _idle.append(block)
        total = sum(b.nbytes for b in _idle)
        while total > MAX_IDLE_BYTES:  # drop the longest idle
            total -= _idle.pop(0).nbytes


def _take(nbytes: int) -> np.ndarray | None:
    with _lock:
        # The most recently freed block that fits without wasting more than half of it.
        for i in range(len(_idle) - 1, -1, -1):
            if nbytes <= _idle[i].nbytes <= 2 * nbytes:
                return _idle.pop(i)
    return None


def empty(shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialised float64 C-contiguous array, like ``np.empty(shape)``, with big ones
    made in a recycled block when one fits, and those of at least `ALIGNED_BYTES` starting on
    a cache line."""
    nbytes = 8 * math.prod(shape)  # (np.prod of a tuple takes ~3 us)
    if nbytes < MIN_BYTES or nbytes > MAX_IDLE_BYTES:
        if nbytes < ALIGNED_BYTES:
            return np.empty(shape)
        return _aligned(np.empty(nbytes + LINE, np.uint8), shape)
    block = _take(nbytes + LINE)
    if block is None:
        block = np.empty(nbytes + LINE, np.uint8)
    return np.asarray(_Lease(block, shape))


def _aligned(block: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Float64s of `shape` in `block` (uint8, LINE bytes more than they need), from its
    first cache line boundary."""
    return np.ndarray(shape, np.float64, block, -block.ctypes.data % LINE)


def idle_bytes() -> int:
    """Bytes kept for reuse now."""
    with _lock:
        return sum(b.nbytes for b in _idle)


def release() -> None:
    """Free every kept block now (they are kept for the next batches, not needed)."""
    with _lock:
        _idle.clear()
