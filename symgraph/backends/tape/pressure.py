"""`few_live_order`: the lanes' depth-first order (`passes.depth_first_order`) with each
instruction that frees at least as many values as it makes run as soon as it is ready.

Depth first from the outputs, a gradient output computed late (df/dT of a reaction network,
which every term feeds) keeps every term's values live until its turn: arrhenius@993's lane
block held ~4,100 live rows of lanes. An instruction whose operands die with it adds no live
value, so running it early never costs a register, and the sums of the gradient then take each
term's contribution as soon as the term is computed, its values freed at once. The order
changes, not the instructions: the numbers are the same bit for bit.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..numba.cache import dispatchers_of, drop_if_changed
from ..numba.cache_files import checked, place_cache
from . import opcodes
from .opcodes import SINCOS

place_cache()  # before the cache=True functions: Numba refuses them with nowhere to cache


@njit(cache=True, nogil=True)
def _push(heap, size, key, i):
    """Push row i onto the binary min-heap `heap[:size]` of rows ordered by `key`."""
    k = size
    heap[k] = i
    while k > 0:
        parent = (k - 1) >> 1
        if key[heap[parent]] <= key[heap[k]]:
            break
        heap[parent], heap[k] = heap[k], heap[parent]
        k = parent
    return size + 1


@njit(cache=True, nogil=True)
def _pop(heap, size, key):
    """(the row of least key, the new size) of the nonempty heap `heap[:size]`."""
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    k = 0
    while True:
        child = 2 * k + 1
        if child >= size:
            break
        if child + 1 < size and key[heap[child + 1]] < key[heap[child]]:
            child += 1
        if key[heap[k]] <= key[heap[child]]:
            break
        heap[k], heap[child] = heap[child], heap[k]
        k = child
    return top, size


@njit(cache=True, nogil=True)
def few_live_order(code, n_values, outputs, order):
    """A new order of the rows of `code` (one write per value, as `passes.tape_values` makes
    them): `order` (a topological order, depth first), but a ready row that frees as many
    values as it writes (its operands' last reads) runs first, earliest in `order` first."""
    n = code.shape[0]
    position = np.empty(n, np.int64)
    for k in range(n):
        position[order[k]] = k
    writer = np.full(n_values, -1, np.int64)
    writes = np.ones(n, np.int64)
    for i in range(n):
        writer[code[i, 1]] = i
        if code[i, 0] == SINCOS:
            writer[code[i, 4]] = i
            writes[i] = 2
    # Each row's distinct operands (-1: none), the readers of each value (CSR), the reads
    # not run yet of each value (an output has one that never runs), rows not ready yet.
    reads = np.full((n, 3), -1, np.int64)
    start = np.zeros(n_values + 1, np.int64)
    waiting = np.zeros(n, np.int64)
    for i in range(n):
        for s in range(2 if code[i, 0] == SINCOS else 3):
            v = code[i, 2 + s]
            if v >= 0 and v != reads[i, 0] and v != reads[i, 1]:
                reads[i, s] = v
                start[v + 1] += 1
                waiting[i] += 1
    for v in range(n_values):
        start[v + 1] += start[v]
    fill = start[:-1].copy()
    readers = np.empty(start[n_values], np.int64)
    for i in range(n):
        for s in range(3):
            v = reads[i, s]
            if v >= 0:
                readers[fill[v]] = i
                fill[v] += 1
    left = np.empty(n_values, np.int64)
    for v in range(n_values):
        left[v] = start[v + 1] - start[v]
    for v in outputs:
        if v >= 0:
            left[v] += 1
    frees = np.zeros(n, np.int64)
    for i in range(n):
        for s in range(3):
            v = reads[i, s]
            if v >= 0 and left[v] == 1:
                frees[i] += 1
    done = np.zeros(n, np.bool_)
    queued = np.zeros(n, np.bool_)
    heap, size = np.empty(n, np.int64), 0
    for i in range(n):
        if waiting[i] == 0 and frees[i] >= writes[i]:
            size = _push(heap, size, position, i)
            queued[i] = True
    out = np.empty(n, np.int64)
    cursor = 0
    for count in range(n):
        if size > 0:
            i, size = _pop(heap, size, position)
        else:
            while done[order[cursor]]:
                cursor += 1
            i = order[cursor]  # the first of `order` not run: its operands are all written
        done[i] = True
        out[count] = i
        for s in range(3):
            v = reads[i, s]
            if v < 0:
                continue
            left[v] -= 1
            if left[v] == 1:  # its one reader left (if any) now frees it
                for k in range(start[v], start[v + 1]):
                    j = readers[k]
                    if not done[j]:
                        frees[j] += 1
                        if waiting[j] == 0 and not queued[j] and frees[j] >= writes[j]:
                            size = _push(heap, size, position, j)
                            queued[j] = True
        for w in range(writes[i]):
            d = code[i, 1] if w == 0 else code[i, 4]
            for k in range(start[d], start[d + 1]):
                j = readers[k]
                waiting[j] -= 1
                if waiting[j] == 0 and not queued[j] and frees[j] >= writes[j]:
                    size = _push(heap, size, position, j)
                    queued[j] = True
    return out


checked(dispatchers_of(sys.modules[__name__]))
drop_if_changed((_push, _pop, few_live_order), (opcodes.__file__,))
