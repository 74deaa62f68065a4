"""The tape builder's passes over instruction arrays, as Numba functions (compiled once per
machine and cached), so a 10^6-instruction tape builds in seconds: `cluster_order` (equal ops
back to back), `linear_scan` (registers for the live values) and `split_blocks` (the
interpreter's blocks). Rows of `code` are (op, target, a, b, c[, step]) over value ids; a
`sincos` row's c is its second target, not an operand. They serve the interpreters of every op
table: `sincos` has a fixed code (`symgraph.backends.tape.opcodes`), and what depends on the
table is passed in (the number of codes, which codes are vector ops).
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
def _heap_push(heap, base, size, item):
    """Push onto the min-heap ``heap[base:base + size]``; returns the new size."""
    k = size
    heap[base + k] = item
    while k > 0 and heap[base + (k - 1) // 2] > heap[base + k]:
        parent = (k - 1) // 2
        heap[base + k], heap[base + parent] = heap[base + parent], heap[base + k]
        k = parent
    return size + 1


@njit(cache=True, nogil=True)
def _heap_pop(heap, base, size):
    """Pop the smallest of ``heap[base:base + size]`` (size > 0); returns it."""
    top = heap[base]
    size -= 1
    heap[base] = heap[base + size]
    k = 0
    while True:
        child = 2 * k + 1
        if child >= size:
            break
        if child + 1 < size and heap[base + child + 1] < heap[base + child]:
            child += 1
        if heap[base + k] <= heap[base + child]:
            break
        heap[base + k], heap[base + child] = heap[base + child], heap[base + k]
        k = child
    return top


@njit(cache=True, nogil=True)
def _prefix_sums(counts):  # in place; np.cumsum's cached code would import Numba's arraymath
    for k in range(1, counts.size):
        counts[k] += counts[k - 1]


@njit(cache=True, nogil=True)
def cluster_order(code, n_values, n_opcodes):
    """An order of the instructions (rows of `code`: op, dst, a, b, c) in which equal opcodes
    run back to back where dependencies allow: each instruction after the writes it reads and
    after the previous write of its target. (Values are rewritten only by chains, whose
    intermediate versions only the next link reads, so reads never wait for rewrites.)

    An interpreter spends most of its time on mispredicted jumps to the next op's code; runs
    of one op are predicted. Greedy: keep taking ready instructions of the current op, oldest
    first; when there are none, switch to the op of the oldest ready instruction.
    """
    n = code.shape[0]
    writer = np.full(n_values, -1, np.int64)
    before = np.full((n, 4), -1, np.int64)
    waiting = np.zeros(n, np.int64)
    start = np.zeros(n + 1, np.int64)  # successors of j: succ[start[j]:start[j + 1]]
    for i in range(n):
        for s in (2, 3, 4, 1):  # reads a, b, c, and the previous write of the target
            v = code[i, s]
            if s == 4 and code[i, 0] == SINCOS:  # its second target, not an operand
                continue
            if v >= 0 and writer[v] >= 0:
                j = writer[v]
                if j != before[i, 0] and j != before[i, 1] and j != before[i, 2]:
                    before[i, waiting[i]] = j
                    waiting[i] += 1
                    start[j + 1] += 1
        writer[code[i, 1]] = i
        if code[i, 0] == SINCOS:
            writer[code[i, 4]] = i
    _prefix_sums(start)
    fill = start[:-1].copy()
    succ = np.empty(start[n], np.int64)
    for i in range(n):
        for k in range(waiting[i]):
            succ[fill[before[i, k]]] = i
            fill[before[i, k]] += 1
    per_op = np.zeros(n_opcodes + 1, np.int64)  # heap of op o: heaps[per_op[o]:...]
    for i in range(n):
        per_op[code[i, 0] + 1] += 1
    _prefix_sums(per_op)
    heaps = np.empty(n, np.int64)
    sizes = np.zeros(n_opcodes, np.int64)
    oldest = np.empty(n, np.int64)  # every ready instruction (stale ones skipped on pop)
    n_oldest = 0
    for i in range(n):
        if waiting[i] == 0:
            op = code[i, 0]
            sizes[op] = _heap_push(heaps, per_op[op], sizes[op], i)
            n_oldest = _heap_push(oldest, 0, n_oldest, i)
    done = np.zeros(n, np.bool_)
    order = np.empty(n, np.int64)
    current = 0
    for position in range(n):
        if sizes[current] == 0:
            while done[oldest[0]]:
                _heap_pop(oldest, 0, n_oldest)
                n_oldest -= 1
            current = code[oldest[0], 0]
        i = _heap_pop(heaps, per_op[current], sizes[current])
        sizes[current] -= 1
        done[i] = True
        order[position] = i
        for k in range(start[i], start[i + 1]):
            j = succ[k]
            waiting[j] -= 1
            if waiting[j] == 0:
                op = code[j, 0]
                sizes[op] = _heap_push(heaps, per_op[op], sizes[op], j)
                n_oldest = _heap_push(oldest, 0, n_oldest, j)
    return order


@njit(cache=True, nogil=True)
def linear_scan(code, outputs, n_values, n_fixed):
    """Registers for the values: fixed ones (< 0) are ``-v - 1``; a value takes a free register
    (the most recently freed) at its first write and frees it after its last use. Returns
    (op, target, a, b, c) rows over registers, the outputs' registers, and the register count.
    """
    n = code.shape[0]
    last = np.full(n_values, -1, np.int64)
    for i in range(n):
        last[code[i, 1]] = i  # a chain writes its target several times
        for s in range(2, 5):
            if code[i, s] >= 0:
                last[code[i, s]] = i
    for v in outputs:
        if v >= 0:
            last[v] = n
    register = np.full(n_values, -1, np.int64)
    free = np.empty(n_values, np.int64)
    n_free = 0
    n_registers = n_fixed
    rows = np.empty((n, 5), np.int32)
    for i in range(n):
        dst = code[i, 1]
        pair = code[i, 0] == SINCOS  # slot 4 holds its second target
        second = code[i, 4] if pair else dst
        reads = 4 if pair else 5
        for s in range(2, reads):
            v = code[i, s]
            rows[i, s] = -v - 1 if v < 0 else register[v]
        # Operands dying here free their registers first: the interpreter reads before it
        # writes, so the result may take one of them (an in-place update).
        for s in range(2, reads):
            v = code[i, s]
            repeated = (s > 2 and v == code[i, 2]) or (s > 3 and v == code[i, 3])
            if v >= 0 and last[v] == i and v != dst and not repeated:
                free[n_free] = register[v]
                n_free += 1
        for v in (dst, second):  # both targets get registers before either is freed
            if register[v] < 0:
                if n_free > 0:
                    n_free -= 1
                    register[v] = free[n_free]
                else:
                    register[v] = n_registers
                    n_registers += 1
        if last[dst] == i:  # written but never read: free again at once
            free[n_free] = register[dst]
            n_free += 1
        if pair and last[second] == i:
            free[n_free] = register[second]
            n_free += 1
        rows[i, 0] = code[i, 0]
        rows[i, 1] = register[dst]
        if pair:
            rows[i, 4] = register[second]
    out = np.empty(outputs.shape[0], np.int32)
    for k in range(outputs.shape[0]):
        v = outputs[k]
        out[k] = -v - 1 if v < 0 else register[v]
    return rows, out, max(n_registers, 1)


@njit(cache=True, nogil=True)
def split_blocks(opcodes, operands, targets, n_registers, vector, max_block):
    """Starts of the interpreter's blocks (and the end): maximal runs of one opcode, where a
    vector op's run is also cut before an instruction reading a register written in it (its
    operands are gathered before any result is stored) and after `max_block` instructions."""
    n = opcodes.shape[0]
    starts = np.empty(n + 1, np.int32)
    written_in = np.full(n_registers, -1, np.int64)  # the block that last wrote a register
    count = 0
    for i in range(n):
        op = opcodes[i]
        new = i == 0 or op != opcodes[i - 1]
        if not new and vector[op]:
            new = i - starts[count - 1] >= max_block
            for s in range(3):
                new = new or written_in[operands[i, s]] == count - 1
        if new:
            starts[count] = i
            count += 1
        written_in[targets[i]] = count - 1
        if op == SINCOS:
            written_in[operands[i, 2]] = count - 1  # its second target
    starts[count] = n
    return starts[:count + 1].copy()


# Numba's cache checks only this file; the machine code also holds `SINCOS`, a fixed code of
# every interpreter (other opcodes come as arguments: the vector mask, the number of codes).
checked(dispatchers_of(sys.modules[__name__]))  # callees load from their own files too
drop_if_changed((cluster_order, linear_scan, split_blocks), (opcodes.__file__,))
