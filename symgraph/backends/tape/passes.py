"""The tape builder's passes over instruction arrays, as Numba functions (compiled once per
machine and cached), so a 10^6-instruction tape builds in seconds: `fuse` (two arithmetic
instructions as one), `cluster_order` (equal ops back to back), `linear_scan` (registers for
the live values) and `split_blocks` (the interpreter's blocks). Rows of `code` are (op, target,
a, b, c[, step]) over value ids; a `sincos` row's c is its second target, not an operand. They
serve the interpreters of every op table: `sincos` has a fixed code
(`symgraph.backends.tape.opcodes`), and what depends on the table is passed in (the number of
codes, which codes are vector ops, the fused forms' codes).
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


# The index of a word's lowest set bit: de Bruijn's multiply, then this table.
_DE_BRUIJN = 0x03F79D71B4CB0A89
_LOWEST = np.zeros(64, np.int64)
for _k in range(64):
    _LOWEST[(((1 << _k) * _DE_BRUIJN) & (2**64 - 1)) >> 58] = _k


@njit(cache=True, nogil=True)
def _lowest(word):
    return _LOWEST[((word & (~word + np.uint64(1))) * np.uint64(_DE_BRUIJN)) >> np.uint64(58)]


@njit(cache=True, nogil=True)
def _insert(bits, summary, base, base1, r):
    """Add r to a set as two-level bitmaps: bit r of the words ``bits[base:]``, and bit w of
    ``summary[base1:]`` for each nonzero word w of them."""
    w = r >> 6
    bits[base + w] |= np.uint64(1) << np.uint64(r & 63)
    summary[base1 + (w >> 6)] |= np.uint64(1) << np.uint64(w & 63)


@njit(cache=True, nogil=True)
def _smallest(bits, summary, base, base1, s, remove):
    """(the smallest member of a nonempty set, its summary word), scanning from summary word
    `s` (none below it is nonzero); removed from the set if `remove`."""
    while summary[base1 + s] == 0:
        s += 1
    w = (s << 6) + _lowest(summary[base1 + s])
    r = (w << 6) + _lowest(bits[base + w])
    if remove:
        bits[base + w] &= ~(np.uint64(1) << np.uint64(r & 63))
        if bits[base + w] == 0:
            summary[base1 + s] &= ~(np.uint64(1) << np.uint64(w & 63))
    return r, s


@njit(cache=True, nogil=True)
def _prefix_sums(counts):  # in place; np.cumsum's cached code would import Numba's arraymath
    for k in range(1, counts.size):
        counts[k] += counts[k - 1]


@njit(cache=True, nogil=True)
def fuse(code, n_values, outputs, forms):
    """The rows (op, dst, a, b, c, step) with pairs made one instruction: a producer row i whose
    result only a later consumer row j reads, ``t = a op b`` then ``u = t op' c`` (or ``c op'
    t``), becomes ``u = fused(a, b, c)`` at j, i dropped, where `forms` has a row (fused code,
    producer code, consumer code, sides: 1 t left, 2 t right, 3 either) for them. Only while a
    and b still hold what i read (no write of them between i and j), and not for an output, a
    value read twice by j (t * t), or a row fused already (three operands at most). Consumers
    in order, each taking the first producer that fits: a chain of k links becomes k / 2.
    """
    n = code.shape[0]
    writer = np.full(n_values, -1, np.int64)  # the row that wrote a value's current version
    reads = np.zeros(n, np.int64)  # reads of the version row i wrote (an output counts 2)
    for j in range(n):
        for s in range(2, 5):
            v = code[j, s]
            if (v < 0 or (s == 4 and code[j, 0] == SINCOS)  # its second target
                    or (s > 2 and v == code[j, 2]) or (s > 3 and v == code[j, 3])):
                continue
            if writer[v] >= 0:
                reads[writer[v]] += 1
        writer[code[j, 1]] = j
        if code[j, 0] == SINCOS:
            writer[code[j, 4]] = j
    for v in outputs:
        if v >= 0 and writer[v] >= 0:
            reads[writer[v]] += 2
    writer[:] = -1
    keep = np.ones(n, np.bool_)
    fused = np.zeros(n, np.bool_)
    rows = code.copy()
    for j in range(n):
        op, x, y = code[j, 0], code[j, 2], code[j, 3]
        for f in range(forms.shape[0]):
            if fused[j]:
                break
            if op != forms[f, 2] or x == y:
                continue
            for side in range(1, 3):
                t, other = (x, y) if side == 1 else (y, x)
                if not forms[f, 3] & side or t < 0:
                    continue
                i = writer[t]
                if i < 0 or fused[i] or code[i, 0] != forms[f, 1] or reads[i] != 1:
                    continue
                a, b = code[i, 2], code[i, 3]
                if (a >= 0 and writer[a] > i) or (b >= 0 and writer[b] > i):
                    continue  # rewritten since i read it (a chain's next link)
                rows[j, 0], rows[j, 2], rows[j, 3], rows[j, 4] = forms[f, 0], a, b, other
                keep[i], fused[j] = False, True
                break
        writer[code[j, 1]] = j
        if op == SINCOS:
            writer[code[j, 4]] = j
    return rows[keep]


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
    # The ready instructions of each op, and all of them, as sets of two-level bitmaps (an
    # op's over its instructions' ranks among the op's), in compact arrays: the loop below
    # reads them in clustered order, and cache misses are most of its time (197,000
    # instructions: 0.055 s with binary heaps over int64 rows, 0.02 s so).
    ops, wait = code[:, 0].astype(np.int32), waiting.astype(np.int32)
    starts, successors = start.astype(np.int32), succ.astype(np.int32)
    count = np.zeros(n_opcodes, np.int64)
    rank = np.empty(n, np.int32)
    for i in range(n):
        rank[i] = count[ops[i]]
        count[ops[i]] += 1
    base, base1 = np.zeros(n_opcodes + 1, np.int64), np.zeros(n_opcodes + 1, np.int64)
    first = np.zeros(n_opcodes + 1, np.int64)
    for op in range(n_opcodes):
        words = (count[op] + 63) >> 6
        base[op + 1], base1[op + 1] = base[op] + words, base1[op] + ((words + 63) >> 6)
        first[op + 1] = first[op] + count[op]
    of_rank = np.empty(n, np.int32)  # op's instruction of rank r: of_rank[first[op] + r]
    for i in range(n):
        of_rank[first[ops[i]] + rank[i]] = i
    bits, summary = np.zeros(base[n_opcodes] + 1, np.uint64), np.zeros(base1[n_opcodes] + 1,
                                                                         np.uint64)
    ready, ready_summary = np.zeros((n >> 6) + 1, np.uint64), np.zeros((n >> 12) + 1, np.uint64)
    sizes, cursor, oldest = np.zeros(n_opcodes, np.int64), np.zeros(n_opcodes, np.int64), 0
    for i in range(n):
        if wait[i] == 0:
            _insert(bits, summary, base[ops[i]], base1[ops[i]], rank[i])
            sizes[ops[i]] += 1
            _insert(ready, ready_summary, 0, 0, i)
    order = np.empty(n, np.int64)
    current = 0
    for position in range(n):
        if sizes[current] == 0:  # the op of the oldest ready instruction
            i, oldest = _smallest(ready, ready_summary, 0, 0, oldest, False)
            current = ops[i]
        r, cursor[current] = _smallest(bits, summary, base[current], base1[current],
                                       cursor[current], True)
        sizes[current] -= 1
        i = of_rank[first[current] + r]
        w = i >> 6
        ready[w] &= ~(np.uint64(1) << np.uint64(i & 63))
        if ready[w] == 0:
            ready_summary[w >> 6] &= ~(np.uint64(1) << np.uint64(w & 63))
        order[position] = i
        for k in range(starts[i], starts[i + 1]):
            j = successors[k]
            wait[j] -= 1
            if wait[j] == 0:
                op = ops[j]
                _insert(bits, summary, base[op], base1[op], rank[j])
                sizes[op] += 1
                cursor[op] = min(cursor[op], rank[j] >> 12)
                _insert(ready, ready_summary, 0, 0, j)
                oldest = min(oldest, j >> 12)
    return order


@njit(cache=True, nogil=True)
def _free_dying(code, i, reads, last, register, free, n_free):
    """Push the registers of row i's operands read for the last time onto `free`."""
    dst = code[i, 1]
    for s in range(2, reads):
        v = code[i, s]
        repeated = (s > 2 and v == code[i, 2]) or (s > 3 and v == code[i, 3])
        if v >= 0 and last[v] == i and v != dst and not repeated:
            free[n_free] = register[v]
            n_free += 1
    return n_free


@njit(cache=True, nogil=True)
def linear_scan(code, outputs, n_values, n_fixed, apart):
    """Registers for the values: fixed ones (< 0) are ``-v - 1``; a value takes a free register
    (the most recently freed) at its first write and frees it after its last use. Returns
    (op, target, a, b, c) rows over registers, the outputs' registers, and the register count.
    `apart` (1; an int, as a bool argument defeats `preload`): a target never takes the
    register of an operand of its own row (a batch's lanes, whose loops vectorise only on rows
    apart); 0: it may (an in-place update).
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
        # writes, so the result may take one of them (an in-place update); after, if `apart`.
        if not apart:
            n_free = _free_dying(code, i, reads, last, register, free, n_free)
        for v in (dst, second):  # both targets get registers before either is freed
            if register[v] < 0:
                if n_free > 0:
                    n_free -= 1
                    register[v] = free[n_free]
                else:
                    register[v] = n_registers
                    n_registers += 1
        if apart:
            n_free = _free_dying(code, i, reads, last, register, free, n_free)
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


@njit(cache=True, nogil=True)
def tape_values(opcodes, operands, targets, outputs, n_fixed, n_registers):
    """A tape's instructions back as rows (op, dst, a, b, c, instruction) over values, each
    write a new value, fixed registers r as ``-r - 1``, for `depth_first_order` and
    `linear_scan`; and the outputs' values, the number of values, and whether the tape could be
    read so (no read of a work register before its first write, no write of a fixed one)."""
    n = opcodes.shape[0]
    unset = -(n_registers + 1)
    current = np.full(n_registers, unset, np.int64)
    for r in range(n_fixed):
        current[r] = -r - 1
    code = np.zeros((n, 6), np.int64)
    values = 0
    for i in range(n):
        op = opcodes[i]
        code[i, 0], code[i, 5] = op, i
        for s in range(2 if op == SINCOS else 3):  # (sincos: its c is a target)
            v = current[operands[i, s]]
            if v == unset:
                return code, current[:0], 0, False
            code[i, 2 + s] = v
        if targets[i] < n_fixed or (op == SINCOS and operands[i, 2] < n_fixed):
            return code, current[:0], 0, False
        code[i, 1] = values
        current[targets[i]] = values
        values += 1
        if op == SINCOS:  # its second target: a value of its own
            code[i, 4] = values
            current[operands[i, 2]] = values
            values += 1
    outs = np.empty(outputs.shape[0], np.int64)
    for k in range(outputs.shape[0]):
        outs[k] = current[outputs[k]]
        if outs[k] == unset:
            return code, current[:0], 0, False
    return code, outs, values, True


@njit(cache=True, nogil=True)
def depth_first_order(code, n_values, outputs):
    """An order of the rows (one write per value, as `tape_values` makes them) in which each
    row comes right after the rows it needs that have not run yet: depth first from the
    outputs (then any row no output needs), operands a, b, c in turn. Values live from their
    write to a use close after, so a batch's register file (a row of lanes per register) stays
    small and in cache; runs of one op are lost, which the lanes (a loop per instruction) do not
    need."""
    n = code.shape[0]
    writer = np.full(n_values, -1, np.int64)
    for i in range(n):
        writer[code[i, 1]] = i
        if code[i, 0] == SINCOS:
            writer[code[i, 4]] = i
    state = np.zeros(n, np.int8)  # 0 unseen, 1 on the stack, 2 placed
    order = np.empty(n, np.int64)
    stack, slot = np.empty(n, np.int64), np.empty(n, np.int64)
    count = 0
    for k in range(outputs.shape[0] + n):
        if k < outputs.shape[0]:
            root = writer[outputs[k]] if outputs[k] >= 0 else -1
        else:
            root = k - outputs.shape[0]
        if root < 0 or state[root] != 0:
            continue
        top, stack[0], slot[0], state[root] = 0, root, 0, 1
        while top >= 0:
            i, s = stack[top], slot[top]
            if s < 3:
                slot[top] = s + 1
                v = code[i, 2 + s]
                if v >= 0 and not (s == 2 and code[i, 0] == SINCOS):
                    j = writer[v]
                    if state[j] == 0:
                        top += 1
                        stack[top], slot[top], state[j] = j, 0, 1
            else:
                order[count] = i
                count += 1
                state[i] = 2
                top -= 1
    return order


# Numba's cache checks only this file; the machine code also holds `SINCOS`, a fixed code of
# every interpreter (other opcodes come as arguments: the vector mask, the number of codes).
checked(dispatchers_of(sys.modules[__name__]))  # callees load from their own files too
drop_if_changed((fuse, cluster_order, linear_scan, split_blocks, tape_values, depth_first_order),
                (opcodes.__file__,))
