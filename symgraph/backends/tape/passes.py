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
from .opcodes import NMUL, SINCOS, SUB

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


# Step kinds of `assemble` (an opcode >= 0 is a plain instruction of its operands).
ADD_CHAIN, MUL_CHAIN, NEG_STEP, SMALL_POWER, SINCOS_SIN, SINCOS_COS, PAIRED, _OUTPUT = range(
    -1, -9, -1)
ASSEMBLED = -1  # `assemble`'s status when every operand was defined before its use


@njit(cache=True, nogil=True)
def _row(code, n_code, op, dst, a, b, c, step):
    """Append one instruction to `code` (doubled when full); returns (code, rows)."""
    if n_code == code.shape[0]:
        bigger = np.empty((2 * code.shape[0] + 16, 6), np.int64)
        bigger[:n_code] = code[:n_code]
        code = bigger
    code[n_code, 0], code[n_code, 1], code[n_code, 2] = op, dst, a
    code[n_code, 3], code[n_code, 4], code[n_code, 5] = b, c, step
    return code, n_code + 1


@njit(cache=True, nogil=True)
def assemble(kinds, aux, starts, refs, signs, n_inputs, n_kids, one_kid, structural):
    """The builder's instructions (rows: op, dst, a, b, c, step over value ids) of a program
    in integers: step j has kind `kinds[j]` and operands ``refs[starts[j]:starts[j + 1]]``
    (>= 0: the name of step r; < 0: ``-i - 1`` input i, ``-n_inputs - 1 - k`` distinct
    constant k), negated where `signs` says; the outputs are the operands after the last
    step's. `aux` is a small power's exponent, a sincos pair's other step. The same rules as
    `builder._Builder`, in the same order (so the same value ids and constant registers):
    chains left to right, negations absorbed by sums and products, materialized once per value
    elsewhere. Returns (code, values, constants' distinct indices in register order, output
    value ids, status: `ASSEMBLED`, or the first step reading a name not defined before it)."""
    add, mul, neg, div = structural[0], structural[1], structural[2], structural[3]
    n = kinds.shape[0]
    value = np.empty(n, np.int64)  # a step's name: a value id, perhaps negated
    flag = np.zeros(n, np.bool_)
    register = np.zeros(n_kids, np.int64)  # a constant's fixed id (0: not used yet)
    kid_order = np.empty(n_kids, np.int64)
    n_consts = 0
    negated_fixed = np.zeros(n_inputs + 1, np.int64)  # materialized negations (0: none yet)
    negated_value = np.full(2 * n + refs.shape[0] + 1, -1, np.int64)
    code = np.empty((refs.shape[0] + n + 16, 6), np.int64)
    n_code = 0
    values = 0
    widest = 1
    for j in range(n):
        widest = max(widest, starts[j + 1] - starts[j])
    term_value = np.empty(widest, np.int64)
    term_sign = np.empty(widest, np.bool_)
    n_outputs = refs.shape[0] - starts[n]
    outputs = np.empty(n_outputs, np.int64)
    for j in range(n + n_outputs):
        if j < n:
            kind, first, m = kinds[j], starts[j], starts[j + 1] - starts[j]
            if kind == PAIRED:
                continue  # its name was given by the first step of its pair
        else:  # an output: its operand, negation materialized
            kind, first, m = _OUTPUT, starts[n] + j - n, 1
        # operands -> (value id, negated); constants take their registers in order of use
        count = 1 if kind == SMALL_POWER or kind == _OUTPUT else m
        for t in range(count):
            r = refs[first + t]
            if r >= 0:
                if r >= min(j, n):
                    return code[:n_code], values, kid_order[:n_consts], outputs, j
                term_value[t], term_sign[t] = value[r], signs[first + t] != flag[r]
            elif -r - 1 < n_inputs:
                term_value[t], term_sign[t] = r, signs[first + t]
            else:
                k = -r - 1 - n_inputs
                if register[k] == 0:
                    register[k] = -(n_inputs + n_consts + 1)
                    kid_order[n_consts] = k
                    n_consts += 1
                term_value[t], term_sign[t] = register[k], False
        if kind == NEG_STEP:
            value[j], flag[j] = term_value[0], not term_sign[0]
            continue
        if kind == ADD_CHAIN or kind == MUL_CHAIN:
            v0, s0 = term_value[0], term_sign[0]
            if m == 1 and not s0:
                value[j], flag[j] = v0, False  # a one-term sum is its term
                continue
            dst = values
            values += 1
            if m == 2 and kind == MUL_CHAIN:
                op = NMUL if s0 != term_sign[1] else mul
                code, n_code = _row(code, n_code, op, dst, v0, term_value[1], term_value[1], j)
            elif m == 2 and not s0:
                op = SUB if term_sign[1] else add
                code, n_code = _row(code, n_code, op, dst, v0, term_value[1], term_value[1], j)
            elif m == 2 and not term_sign[1]:  # -a + b is b - a bit for bit
                code, n_code = _row(code, n_code, SUB, dst, term_value[1], v0, v0, j)
            elif m == 2:  # -a - b
                code, n_code = _row(code, n_code, neg, dst, v0, v0, v0, j)
                code, n_code = _row(code, n_code, SUB, dst, dst, term_value[1],
                                    term_value[1], j)
            elif kind == MUL_CHAIN and m > 1:  # negated factors set the sign of the last link
                odd = False
                for t in range(m):
                    odd = odd != term_sign[t]
                for t in range(1, m):
                    op = NMUL if odd and t == m - 1 else mul
                    code, n_code = _row(code, n_code, op, dst, v0, term_value[t],
                                        term_value[t], j)
                    v0 = dst
            else:
                if s0 and m > 1 and not term_sign[1]:  # -a + b + ... is b - a + ...
                    term_value[0], term_value[1] = term_value[1], v0
                    term_sign[0], term_sign[1] = False, True
                    v0, s0 = term_value[0], False
                if s0:
                    code, n_code = _row(code, n_code, neg, dst, v0, v0, v0, j)
                    v0 = dst
                link = add if kind == ADD_CHAIN else mul
                for t in range(1, m):
                    op = SUB if term_sign[t] else link
                    code, n_code = _row(code, n_code, op, dst, v0, term_value[t],
                                        term_value[t], j)
                    v0 = dst
            value[j], flag[j] = dst, False
            continue
        # every other kind reads its operands as values: negations materialized, once each
        for t in range(count):
            if term_sign[t]:
                v = term_value[t]
                known = negated_fixed[-v - 1] if v < 0 else negated_value[v]
                if (v < 0 and known == 0) or (v >= 0 and known < 0):
                    known = values
                    values += 1
                    code, n_code = _row(code, n_code, neg, known, v, v, v, j if j < n else -1)
                    if v < 0:
                        negated_fixed[-v - 1] = known + 1  # (0 means none: stored plus one)
                    else:
                        negated_value[v] = known
                elif v < 0:
                    known -= 1
                term_value[t] = known
        if j >= n:
            outputs[j - n] = term_value[0]
            continue
        if kind == SINCOS_SIN or kind == SINCOS_COS:
            sin, cos = values, values + 1
            values += 2
            x = term_value[0]
            code, n_code = _row(code, n_code, SINCOS, sin, x, x, cos, j)
            mine, other = (sin, cos) if kind == SINCOS_SIN else (cos, sin)
            value[j], flag[j] = mine, False
            value[aux[j]], flag[aux[j]] = other, False
            continue
        dst = values
        values += 1
        if kind == SMALL_POWER:  # the pow template: x**3 is x * x * x, x**-2 is 1.0 / (x * x)
            k, base = aux[j], term_value[0]
            product = base
            for _ in range(abs(k) - 1):
                code, n_code = _row(code, n_code, mul, dst, product, base, base, j)
                product = dst
            if k < 0 or k == 1:
                if register[one_kid] == 0:
                    register[one_kid] = -(n_inputs + n_consts + 1)
                    kid_order[n_consts] = one_kid
                    n_consts += 1
                one = register[one_kid]
                if k < 0:
                    code, n_code = _row(code, n_code, div, dst, one, product, product, j)
                else:
                    code, n_code = _row(code, n_code, mul, dst, base, one, base, j)
        else:
            a = term_value[0]
            b = term_value[1] if m > 1 else a
            c = term_value[2] if m > 2 else a
            code, n_code = _row(code, n_code, kind, dst, a, b, c, j)
        value[j], flag[j] = dst, False
    return code[:n_code], values, kid_order[:n_consts], outputs, ASSEMBLED


# Numba's cache checks only this file; the machine code also holds `SINCOS`, a fixed code of
# every interpreter (other opcodes come as arguments: the vector mask, the number of codes).
checked(dispatchers_of(sys.modules[__name__]))  # callees load from their own files too
drop_if_changed((assemble, cluster_order, linear_scan, split_blocks), (opcodes.__file__,))
