"""The tape interpreter: one Numba function that runs every tape, compiled once and cached.

A tape is a flat list of instructions ``regs[target] = op(regs[a], regs[b], regs[c])`` over one
register file laid out as ``[inputs | constants | work registers]`` (see `symgraph.tape`). The
interpreter's machine code does not depend on the expression, so it is compiled once per
machine (``cache=True`` keeps it in this package's ``__pycache__``) and a 10^6-instruction
tape costs no compile time at all.

Instructions run in *blocks*, runs of one op (`symgraph.tape_passes.split_blocks`), so an op
is decoded once per block. Most ops are computed with exactly the expression of their Numba
template in the op table (``OPS[name].nb`` rendered with operands ``a, b, c``;
`tests/test_tape.py` checks the text). The vector ops (`VECTOR_OPCODES`: exp, expm1, log,
log1p, sin, cos, tanh, sigmoid, erf, and `sincos`, the sin and cos of one operand from one
argument reduction) use `symgraph.vecmath` instead of libm, one SIMD loop per block: within
an ulp of the true value like libm, so they may differ from the straight-line kernels in the
last bit. Flags are the straight-line kernels' (``error_model="numpy"``, no
fastmath), so edge points give NumPy's answers (1/0 = inf, log(-1) = nan) and never raise.

Opcode numbers are written out below, in the sorted order of the op table's names, rather than
computed from `OPS` at import: Numba freezes globals into the cached machine code, and a
renumbering that did not touch this file would otherwise run stale code. A test checks that
`OP_NAMES` is ``sorted(OPS)``; ops added to the table later are refused by the tape builder
until they are added here.

`symgraph.tape_module` wraps these kernels as `Tape` and `TapeModule` objects.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..numba import vecmath
from ..numba.cache import drop_if_changed
from ..numba.runtime import bits
from ..numba.vecmath import (
    SIN_COS_LIMIT,
    _where,
    vcos,
    verf,
    vexp,
    vexpm1,
    vlog,
    vlog1p,
    vsin,
    vsincos,
    vtanh,
)

OP_NAMES = (
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil",
    "cos", "cosh", "div", "eq", "erf", "erfc", "exp", "expm1", "floor", "ge", "gt", "hypot",
    "le", "log", "log10", "log1p", "log2", "lt", "max", "min", "mul", "ne", "neg", "pow", "relu",
    "sigmoid", "sign", "sin", "sinh", "softplus", "sqrt", "tan", "tanh", "where",
)
(ABS, ACOS, ACOSH, ADD, ASIN, ASINH, ATAN, ATAN2, ATANH, CBRT, CEIL,
 COS, COSH, DIV, EQ, ERF, ERFC, EXP, EXPM1, FLOOR, GE, GT, HYPOT,
 LE, LOG, LOG10, LOG1P, LOG2, LT, MAX, MIN, MUL, NE, NEG, POW, RELU,
 SIGMOID, SIGN, SIN, SINH, SOFTPLUS, SQRT, TAN, TANH, WHERE) = range(45)
# Tape-only instructions: `a - b`, for a sum term printed as subtraction (bit-identical to
# a + -b), and `-(a * b)`, the last link of a product with an odd number of negated factors
# (rounding is symmetric, so (-a) * b is -(a * b) bit for bit): negations cost no instruction.
SUB, NMUL = 45, 46
# `r_t, r_c = sincos(r_a)`: a value's sin and cos from one argument reduction (vecmath computes
# both anyway), for the pairs reverse mode makes (sin(u) and its derivative cos(u)). Its second
# target is in its third operand slot.
SINCOS = 47
OPCODES = {name: code for code, name in enumerate(OP_NAMES)}
INSTRUCTION_NAMES = (*OP_NAMES, "sub", "nmul", "sincos")


@njit(error_model="numpy")
def apply(op, a, b, c):  # noqa: C901 - one flat dispatch is the point
    """The value of instruction `op` on operands a, b, c (c is used by `where` only). Not
    inlined: one compiled copy serves both interpreters' rare ops (inlining it twice cost 2.3 s
    more of the one-time compile for no measurable speed)."""
    # The most frequent ops first; LLVM turns the chain into a jump table anyway.
    if op == ADD:
        r = a + b
    elif op == MUL:
        r = a * b
    elif op == SUB:
        r = a - b
    elif op == NMUL:
        r = -(a * b)
    elif op == NEG:
        r = -a
    elif op == DIV:
        r = a / b
    elif op == POW:
        r = a ** b
    elif op == SIN:
        r = math.sin(a)
    elif op == COS:
        r = math.cos(a)
    elif op == EXP:
        r = math.exp(a)
    elif op == LOG:
        r = math.log(a)
    elif op == TANH:
        r = math.tanh(a)
    elif op == SQRT:
        r = math.sqrt(a)
    elif op == SIGMOID:
        r = 1.0 / (1.0 + math.exp(-a))
    elif op == WHERE:
        r = (b if a != 0.0 else c)
    elif op == ABS:
        r = abs(a)
    elif op == ACOS:
        r = math.acos(a)
    elif op == ACOSH:
        r = math.acosh(a)
    elif op == ASIN:
        r = math.asin(a)
    elif op == ASINH:
        r = math.asinh(a)
    elif op == ATAN:
        r = math.atan(a)
    elif op == ATAN2:
        r = math.atan2(a, b)
    elif op == ATANH:
        r = math.atanh(a)
    elif op == CBRT:
        r = np.cbrt(a)
    elif op == CEIL:
        r = np.ceil(a)
    elif op == COSH:
        r = math.cosh(a)
    elif op == EQ:
        r = (1.0 if a == b else 0.0)
    elif op == ERF:
        r = math.erf(a)
    elif op == ERFC:
        r = math.erfc(a)
    elif op == EXPM1:
        r = math.expm1(a)
    elif op == FLOOR:
        r = np.floor(a)
    elif op == GE:
        r = (1.0 if a >= b else 0.0)
    elif op == GT:
        r = (1.0 if a > b else 0.0)
    elif op == HYPOT:
        r = math.hypot(a, b)
    elif op == LE:
        r = (1.0 if a <= b else 0.0)
    elif op == LOG10:
        r = math.log10(a)
    elif op == LOG1P:
        r = math.log1p(a)
    elif op == LOG2:
        r = math.log2(a)
    elif op == LT:
        r = (1.0 if a < b else 0.0)
    elif op == MAX:
        r = (a if a >= b or a != a else b)
    elif op == MIN:
        r = (a if a <= b or a != a else b)
    elif op == NE:
        r = (1.0 if a != b else 0.0)
    elif op == RELU:
        r = (a if a > 0.0 or a != a else 0.0)
    elif op == SIGN:
        r = (1.0 if a > 0.0 else (-1.0 if a < 0.0 else a))
    elif op == SINH:
        r = math.sinh(a)
    elif op == SOFTPLUS:
        r = ((a if a > 0.0 else 0.0) + math.log1p(math.exp(-abs(a))))
    elif op == TAN:
        r = math.tan(a)
    else:
        r = math.nan  # unreachable: the builder emits only the opcodes above
    return r


# Ops run as one loop over a whole block of instructions (`_unary`) with symgraph.vecmath's
# vectorisable functions: a point's independent calls share SIMD lanes, and across a batch's
# lanes the loop is the one the vector code needs.
VECTOR_OPCODES = (EXP, EXPM1, LOG, LOG1P, SIN, COS, TANH, SIGMOID, ERF, SINCOS)
MAX_BLOCK = 256  # instructions a vector block gathers at most (its buffer's length)
SIMD = 8  # doubles per vector register (AVX-512); a multiple of narrower widths


_IS_VECTOR = np.zeros(len(INSTRUCTION_NAMES), np.bool_)  # a constant array in compiled code
_IS_VECTOR[list(VECTOR_OPCODES)] = True


@njit(error_model="numpy", inline="always")
def is_vector(op):
    return _IS_VECTOR[op]  # (`op in VECTOR_OPCODES` would link Numba's list code)


@njit(error_model="numpy", inline="always")
def _unary(op, src, dst, n):
    """dst[:n] = op(src[:n]) for a vector op: one loop per op, nothing decoded inside it.
    sin/cos reduce exactly only up to SIN_COS_LIMIT: larger (and non-finite) arguments, which
    practice never meets, go to libm, in a scalar loop for the block."""
    if op == EXP:
        for j in range(n):
            dst[j] = vexp(src[j])
    elif op == LOG:
        for j in range(n):
            dst[j] = vlog(src[j])
    elif op == TANH:
        for j in range(n):
            dst[j] = vtanh(src[j])
    elif op == SIGMOID:
        for j in range(n):
            dst[j] = 1.0 / (1.0 + vexp(-src[j]))
    elif op == ERF:
        for j in range(n):
            dst[j] = verf(src[j])
    elif op == EXPM1:
        for j in range(n):
            dst[j] = vexpm1(src[j])
    elif op == LOG1P:
        for j in range(n):
            dst[j] = vlog1p(src[j])
    else:  # SIN, COS
        far = 0
        for j in range(n):
            far |= _where(abs(src[j]) <= SIN_COS_LIMIT, 0, 1)
        if far:  # value by value, so a value's result never depends on its neighbours
            for j in range(n):
                x = src[j]
                if abs(x) <= SIN_COS_LIMIT:
                    dst[j] = vsin(x) if op == SIN else vcos(x)
                else:
                    dst[j] = math.sin(x) if op == SIN else math.cos(x)
        elif op == SIN:
            for j in range(n):
                dst[j] = vsin(src[j])
        else:
            for j in range(n):
                dst[j] = vcos(src[j])


@njit(error_model="numpy", inline="always")
def _sincos(x, sin_out, cos_out, n):
    """sin_out[:n], cos_out[:n] = sin(x[:n]), cos(x[:n]) (x may be sin_out): vecmath's shared
    reduction, with libm value by value beyond SIN_COS_LIMIT (never met in practice)."""
    far = 0
    for j in range(n):
        far |= _where(abs(x[j]) <= SIN_COS_LIMIT, 0, 1)
    if far:
        for j in range(n):
            v = x[j]
            near = abs(v) <= SIN_COS_LIMIT
            cos_out[j] = vcos(v) if near else math.cos(v)
            sin_out[j] = vsin(v) if near else math.sin(v)
    else:
        for j in range(n):
            v = x[j]
            sin_value, cos_value = vsincos(v)
            cos_out[j] = cos_value
            sin_out[j] = sin_value


@njit(cache=True, error_model="numpy", nogil=True)
def run(opcodes, operands, targets, blocks, regs, gathered):
    """Execute the instructions on the register file `regs` (modified in place), a block at a
    time: a block is a run of one op, so the op is decoded once per block, not per instruction.
    A vector block's operands are gathered into `gathered` (>= MAX_BLOCK floats), computed in
    one loop and scattered back: its instructions never read each other's results."""
    for k in range(blocks.shape[0] - 1):
        # Unsigned indices: no wraparound check for negative indices on every access.
        s, e = blocks[k], blocks[k + 1]
        op = opcodes[s]
        if op == ADD:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = (regs[np.uint32(operands[i, 0])]
                                               + regs[np.uint32(operands[i, 1])])
        elif op == MUL:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = (regs[np.uint32(operands[i, 0])]
                                               * regs[np.uint32(operands[i, 1])])
        elif op == SUB:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = (regs[np.uint32(operands[i, 0])]
                                               - regs[np.uint32(operands[i, 1])])
        elif op == NMUL:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = -(regs[np.uint32(operands[i, 0])]
                                                * regs[np.uint32(operands[i, 1])])
        elif op == NEG:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = -regs[np.uint32(operands[i, 0])]
        elif op == DIV:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = (regs[np.uint32(operands[i, 0])]
                                               / regs[np.uint32(operands[i, 1])])
        elif op == SINCOS:
            n = e - s
            second = gathered[MAX_BLOCK:]
            for j in range(n):
                gathered[j] = regs[np.uint32(operands[s + j, 0])]
            padded = (n + SIMD - 1) // SIMD * SIMD
            gathered[n:padded] = 0.0
            _sincos(gathered, gathered, second, padded)
            for j in range(n):
                regs[np.uint32(targets[s + j])] = gathered[j]
                regs[np.uint32(operands[s + j, 2])] = second[j]
        elif is_vector(op):
            n = e - s
            for j in range(n):
                gathered[j] = regs[np.uint32(operands[s + j, 0])]
            # Whole SIMD vectors only: a loop's scalar remainder runs the vector code one
            # value at a time, no faster than libm.
            padded = (n + SIMD - 1) // SIMD * SIMD
            gathered[n:padded] = 0.0
            _unary(op, gathered, gathered, padded)
            for j in range(n):
                regs[np.uint32(targets[s + j])] = gathered[j]
        else:
            for i in range(s, e):
                regs[np.uint32(targets[i])] = apply(op, regs[np.uint32(operands[i, 0])],
                                                    regs[np.uint32(operands[i, 1])],
                                                    regs[np.uint32(operands[i, 2])])


@njit(error_model="numpy", inline="always")
def _load(regs, x, constants):
    # Loops, not slice assignments: their shape check's error message needs Numba's string code.
    n = x.shape[0]
    for k in range(n):
        regs[k] = x[k]
    for k in range(constants.shape[0]):
        regs[n + k] = constants[k]


@njit(cache=True, error_model="numpy", nogil=True)
def run_row(opcodes, operands, targets, blocks, constants, outputs, n_registers, x, out, regs):
    """One point: inputs `x` (n_inputs,), results into `out` (len(outputs),); `regs` has
    n_registers + 2 * MAX_BLOCK floats (the tail: the vector blocks' buffers).

    The entry points allocate nothing and call no generic builtins (min, max): machine code that
    does refers to Numba modules (for their error messages), which then load with it."""
    _load(regs, x, constants)
    run(opcodes, operands, targets, blocks, regs, regs[n_registers:])
    for k in range(outputs.shape[0]):
        out[k] = regs[outputs[k]]


@njit(cache=True, error_model="numpy", nogil=True)
def run_lanes(opcodes, operands, targets, blocks, regs, lanes):
    """`run` on `lanes` points at once: `regs` is (registers, >= lanes), a row per register.

    Each instruction is decoded once and is one loop over the lanes, which LLVM vectorises for
    the arithmetic ops: dispatch is shared by the lanes, and the lanes are SIMD lanes.
    """
    for k in range(blocks.shape[0] - 1):
        s, e = blocks[k], blocks[k + 1]
        op = opcodes[s]
        if op == ADD or op == MUL or op == SUB or op == DIV or op == NMUL:
            for i in range(s, e):
                ti, ai = np.uint32(targets[i]), np.uint32(operands[i, 0])
                t, b = regs[ti], regs[np.uint32(operands[i, 1])]
                # An in-place update gets its own loop: LLVM vectorises `t = a + b` only after
                # a runtime check that t and a do not overlap, which t is a fails.
                if ti == ai:
                    _binary_in_place(op, t, b, lanes)
                else:
                    _binary(op, regs[ai], b, t, lanes)
        elif op == NEG:
            for i in range(s, e):
                t, a = regs[np.uint32(targets[i])], regs[np.uint32(operands[i, 0])]
                for j in range(lanes):
                    t[j] = -a[j]
        elif op == SINCOS:
            scratch = regs[regs.shape[0] - 1]  # a row of its own: no overlap for LLVM to check
            for i in range(s, e):
                a = regs[np.uint32(operands[i, 0])]
                for j in range(lanes):  # (a slice copy would link Numba's string code)
                    scratch[j] = a[j]
                _sincos(scratch, regs[np.uint32(targets[i])], regs[np.uint32(operands[i, 2])],
                        lanes)
        elif is_vector(op):
            for i in range(s, e):
                ti, ai = np.uint32(targets[i]), np.uint32(operands[i, 0])
                t = regs[ti]
                if ti == ai:  # one array for both: LLVM sees no overlap to check at run time
                    _unary(op, t, t, lanes)
                else:
                    _unary(op, regs[ai], t, lanes)
        else:
            for i in range(s, e):
                t, a = regs[np.uint32(targets[i])], regs[np.uint32(operands[i, 0])]
                b, c = regs[np.uint32(operands[i, 1])], regs[np.uint32(operands[i, 2])]
                for j in range(lanes):
                    t[j] = apply(op, a[j], b[j], c[j])


@njit(error_model="numpy", inline="always")
def _binary(op, a, b, t, n):
    if op == ADD:
        for j in range(n):
            t[j] = a[j] + b[j]
    elif op == MUL:
        for j in range(n):
            t[j] = a[j] * b[j]
    elif op == SUB:
        for j in range(n):
            t[j] = a[j] - b[j]
    elif op == NMUL:
        for j in range(n):
            t[j] = -(a[j] * b[j])
    else:
        for j in range(n):
            t[j] = a[j] / b[j]


@njit(error_model="numpy", inline="always")
def _binary_in_place(op, t, b, n):
    if op == ADD:
        for j in range(n):
            t[j] = t[j] + b[j]
    elif op == MUL:
        for j in range(n):
            t[j] = t[j] * b[j]
    elif op == SUB:
        for j in range(n):
            t[j] = t[j] - b[j]
    elif op == NMUL:
        for j in range(n):
            t[j] = -(t[j] * b[j])
    else:
        for j in range(n):
            t[j] = t[j] / b[j]


@njit(cache=True, error_model="numpy", nogil=True)
def run_batch(opcodes, operands, targets, blocks, constants, outputs, n_registers, X, OUT,
              regs):
    """Rows of `X` (N, n_inputs) into rows of `OUT` (N, len(outputs)), as many points at a
    time as `regs` (n_registers + 1, width) has columns: the caller's register file, so no
    point allocates (its last row is scratch for sincos). Serial and without the GIL:
    `symgraph.batching` runs parts of a batch on several threads."""
    rows, n, width = X.shape[0], X.shape[1], regs.shape[1]
    for k in range(constants.shape[0]):
        for j in range(width):
            regs[n + k, j] = constants[k]  # constants are never overwritten
    for first in range(0, rows, width):
        lanes = width if rows - first > width else rows - first
        for j in range(lanes):
            for k in range(n):
                regs[k, j] = X[first + j, k]
        run_lanes(opcodes, operands, targets, blocks, regs, lanes)
        for j in range(lanes):
            for k in range(outputs.shape[0]):
                OUT[first + j, k] = regs[outputs[k], j]


@njit(cache=True, error_model="numpy", nogil=True)
def run_points(opcodes, operands, targets, blocks, constants, outputs, n_registers, X, OUT,
               regs):
    """`run_batch` one point at a time, on one register file (`regs` as for `run_row`): for
    tapes too big for lanes."""
    for i in range(X.shape[0]):
        _load(regs, X[i], constants)
        run(opcodes, operands, targets, blocks, regs, regs[n_registers:])
        for k in range(outputs.shape[0]):
            OUT[i, k] = regs[outputs[k]]


# Numba's cache checks only this file; the machine code also holds vecmath's functions.
drop_if_changed((run, run_row, run_lanes, run_batch, run_points),
                (vecmath.__file__, bits.__file__))
