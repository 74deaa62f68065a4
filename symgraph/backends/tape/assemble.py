"""The tape builder's first pass, as a Numba function (compiled once per machine and cached):
`assemble` makes the builder's instructions from a program in integers (`encode.py`), by the
rules of `builder._Builder` (which builds them one Python call per step: ~3x slower at 10^5
steps, and kept for programs `encode` declines and as the tests' reference).
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


# Numba's cache checks only this file; the machine code also holds the fixed opcodes.
checked(dispatchers_of(sys.modules[__name__]))
drop_if_changed((assemble,), (opcodes.__file__,))
