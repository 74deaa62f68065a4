"""The tape interpreter: one Numba function that runs every tape, compiled once and cached.

A tape is a flat list of instructions ``regs[target] = op(regs[a], regs[b], regs[c])`` over one
register file laid out as ``[inputs | constants | work registers]`` (see `symgraph.tape`). The
interpreter's machine code does not depend on the expression, so it is compiled once per
machine (``cache=True`` keeps it in this package's ``__pycache__``) and a 10^6-instruction
tape costs no compile time at all.

Each op is computed with exactly the expression of its Numba template in the op table
(``OPS[name].nb`` rendered with operands ``a, b, c``; `tests/test_tape.py` checks the text), and
with the same flags as the straight-line kernels (``error_model="numpy"``, no fastmath), so
edge points give NumPy's answers (1/0 = inf, log(-1) = nan) and never raise.

Opcode numbers are written out below, in the sorted order of the op table's names, rather than
computed from `OPS` at import: Numba freezes globals into the cached machine code, and a
renumbering that did not touch this file would otherwise run stale code. A test checks that
`OP_NAMES` is ``sorted(OPS)``; ops added to the table later are refused by the tape builder
until they are added here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

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
# Tape-only instruction: `a - b`, for a sum term printed as subtraction (bit-identical to a + -b).
SUB = 45
OPCODES = {name: code for code, name in enumerate(OP_NAMES)}
INSTRUCTION_NAMES = (*OP_NAMES, "sub")


@njit(error_model="numpy", inline="always")
def apply(op, a, b, c):  # noqa: C901 - one flat dispatch is the point
    """The value of instruction `op` on operands a, b, c (c is used by `where` only)."""
    # The most frequent ops first; LLVM turns the chain into a jump table anyway.
    if op == ADD:
        r = a + b
    elif op == MUL:
        r = a * b
    elif op == SUB:
        r = a - b
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
        r = (max(a, 0.0) + math.log1p(math.exp(-abs(a))))
    elif op == TAN:
        r = math.tan(a)
    else:
        r = math.nan  # unreachable: the builder emits only the opcodes above
    return r


@njit(cache=True, error_model="numpy", nogil=True)
def run(opcodes, operands, targets, regs):
    """Execute the instructions in order on the register file `regs` (modified in place)."""
    for i in range(opcodes.shape[0]):
        # Unsigned indices: no wraparound check for negative indices on every access.
        regs[np.uint32(targets[i])] = apply(opcodes[i], regs[np.uint32(operands[i, 0])],
                                            regs[np.uint32(operands[i, 1])],
                                            regs[np.uint32(operands[i, 2])])


@njit(cache=True, error_model="numpy", nogil=True)
def run_row(opcodes, operands, targets, constants, outputs, n_registers, x, out):
    """One point: inputs `x` (n_inputs,), results into `out` (len(outputs),)."""
    regs = np.empty(n_registers)
    n = x.shape[0]
    regs[:n] = x
    regs[n:n + constants.shape[0]] = constants
    run(opcodes, operands, targets, regs)
    for k in range(outputs.shape[0]):
        out[k] = regs[outputs[k]]


@njit(cache=True, error_model="numpy", nogil=True)
def run_lanes(opcodes, operands, targets, regs, lanes):
    """`run` on `lanes` points at once: `regs` is (registers, >= lanes), a column per point.

    Each instruction is decoded once and applied to every lane, so the cost of dispatch (an
    unpredictable indirect jump, most of an interpreter's time) is shared by the lanes.
    """
    for i in range(opcodes.shape[0]):
        op, t = opcodes[i], np.uint32(targets[i])
        a, b, c = np.uint32(operands[i, 0]), np.uint32(operands[i, 1]), np.uint32(operands[i, 2])
        for j in range(lanes):
            regs[t, j] = apply(op, regs[a, j], regs[b, j], regs[c, j])


@njit(cache=True, error_model="numpy", parallel=True)
def run_batch(opcodes, operands, targets, constants, outputs, n_registers, X, OUT, blocks,
              width):
    """Rows of `X` (N, n_inputs) into rows of `OUT` (N, len(outputs)), in parallel.

    Rows are split into `blocks` (a few per thread), each with its own register file of
    `width` lanes allocated once: no point allocates and threads never share registers.
    """
    rows, n = X.shape[0], X.shape[1]
    blocks = min(rows, blocks)
    for block in prange(blocks):
        regs = np.empty((n_registers, width))
        for k in range(constants.shape[0]):
            regs[n + k, :] = constants[k]  # constants are never overwritten
        stop = (block + 1) * rows // blocks
        for first in range(block * rows // blocks, stop, width):
            lanes = min(width, stop - first)
            for j in range(lanes):
                for k in range(n):
                    regs[k, j] = X[first + j, k]
            run_lanes(opcodes, operands, targets, regs, lanes)
            for j in range(lanes):
                for k in range(outputs.shape[0]):
                    OUT[first + j, k] = regs[outputs[k], j]
