"""The tape interpreter of one op table, generated from it by
`symgraph.backends.tape.generate`: do not edit. Codes are `INSTRUCTION_NAMES`' positions
(`symgraph.backends.tape.opcodes`); `apply` computes every op with its op-table template
(``nb``), `_unary` the vector ops with theirs (``lanes``, `symgraph.backends.numba.vecmath`),
`_lanes` the other ops a loop per op over a batch's lanes, and the rest is the interpreter, the
same for every table (`symgraph.backends.tape.interpreter`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from symgraph.backends.numba.special import (
    _sf_besselj,
    _sf_bessely,
    _sf_beta,
    _sf_digamma,
    _sf_erfcinv,
    _sf_erfinv,
    _sf_gamma,
    _sf_lbeta,
    _sf_lgamma,
    _sf_polygamma,
    _sf_xlogy,
)
from symgraph.backends.numba.vecmath import (
    ASINH_LIMIT,
    HYPERBOLIC_LIMIT,
    SIN_COS_LIMIT,
    _where,
    vasinh,
    vatan,
    vatan2,
    vatan2off,
    vatanh,
    vcbrt,
    vcos,
    vcosh,
    vdigamma,
    verf,
    vexp,
    vexpm1,
    vgammaoff,
    vhypot,
    vlgamma,
    vlog,
    vlog1p,
    vlog2,
    vlog10,
    vpow,
    vpowoff,
    vsigmoid,
    vsin,
    vsincos,
    vsinh,
    vtan,
    vtanh,
    vxlogy,
)

# Codes: the tape-only instructions, then the op table in table order. Tape-only: `a - b`, for a
# sum term printed as subtraction (bit-identical to a + -b); `-(a * b)`, the last link of a
# product with an odd number of negated factors (rounding is symmetric, so (-a) * b is -(a * b)
# bit for bit): negations cost no instruction; `r_t, r_c = sincos(r_a)`, a value's sin and cos
# from one argument reduction, for the pairs reverse mode makes (sin(u) and its derivative
# cos(u)), its second target in its third operand slot; the fused instructions (`_fused`).
INSTRUCTION_NAMES = (
    "sub", "nmul", "sincos", "add3", "mul3", "muladd", "sub3", "mulsub", "kmul", "kadd", "ksub",
    "kdiv", "kmul3", "mul3k", "kmuladd", "mulsubk", "add", "mul", "neg", "div", "pow", "lt", "le",
    "gt", "ge", "eq", "ne", "where", "sqrt", "cbrt", "exp", "expm1", "log", "log1p", "log2",
    "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "erf", "erfc", "abs", "sign", "floor", "ceil", "relu", "sigmoid", "softplus", "min",
    "max", "atan2", "hypot", "gamma", "lgamma", "digamma", "polygamma", "beta", "lbeta", "erfinv",
    "erfcinv", "besselj", "bessely", "xlogy", "pow_prev",
)
ARITIES = (
    2, 2, 1, 3, 3, 3, 3, 3, 2, 2, 2, 2, 3, 3, 3, 3, 2, 2, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 1,
    2, 2, 2, 1, 1, 2, 2, 2, 3,
)
TABLE = "d226f1b3c64789252ab6d50b"  # the digest of this instruction set
(SUB, NMUL, SINCOS, ADD3, MUL3, MULADD, SUB3, MULSUB, KMUL, KADD, KSUB, KDIV, KMUL3, MUL3K, KMULADD,
 MULSUBK, ADD, MUL, NEG, DIV, POW, LT, LE, GT, GE, EQ, NE, WHERE, SQRT, CBRT, EXP, EXPM1, LOG,
 LOG1P, LOG2, LOG10, SIN, COS, TAN, ASIN, ACOS, ATAN, SINH, COSH, TANH, ASINH, ACOSH, ATANH, ERF,
 ERFC, ABS, SIGN, FLOOR, CEIL, RELU, SIGMOID, SOFTPLUS, MIN, MAX, ATAN2, HYPOT, GAMMA, LGAMMA,
 DIGAMMA, POLYGAMMA, BETA, LBETA, ERFINV, ERFCINV, BESSELJ, BESSELY, XLOGY, POW_PREV) = range(73)


@njit(error_model="numpy")
def apply(op, a, b, c):  # noqa: C901 - one flat dispatch is the point
    """The value of instruction `op` on operands a, b, c (c is read by three-operand ops
    only), each op by its op-table template. Not inlined: one compiled copy serves both
    interpreters' rare ops (inlining it twice cost 2.3 s more of the one-time compile for no
    measurable speed). LLVM turns the chain into a jump table."""
    if op == SUB:
        r = a - b
    elif op == NMUL:
        r = -(a * b)
    elif op == ADD3:
        r = a + b + c
    elif op == MUL3:
        r = a * b * c
    elif op == MULADD:
        r = a * b + c
    elif op == SUB3:
        r = a - b - c
    elif op == MULSUB:
        r = c - a * b
    elif op == KMUL:
        r = a * b
    elif op == KADD:
        r = a + b
    elif op == KSUB:
        r = a - b
    elif op == KDIV:
        r = a / b
    elif op == KMUL3:
        r = a * b * c
    elif op == MUL3K:
        r = a * b * c
    elif op == KMULADD:
        r = a * b + c
    elif op == MULSUBK:
        r = c - a * b
    elif op == ADD:
        r = a + b
    elif op == MUL:
        r = a * b
    elif op == NEG:
        r = -a
    elif op == DIV:
        r = a / b
    elif op == POW:
        r = a ** b
    elif op == LT:
        r = (1.0 if a < b else 0.0)
    elif op == LE:
        r = (1.0 if a <= b else 0.0)
    elif op == GT:
        r = (1.0 if a > b else 0.0)
    elif op == GE:
        r = (1.0 if a >= b else 0.0)
    elif op == EQ:
        r = (1.0 if a == b else 0.0)
    elif op == NE:
        r = (1.0 if a != b else 0.0)
    elif op == WHERE:
        r = (b if a != 0.0 else c)
    elif op == SQRT:
        r = math.sqrt(a)
    elif op == CBRT:
        r = vcbrt(a)
    elif op == EXP:
        r = math.exp(a)
    elif op == EXPM1:
        r = math.expm1(a)
    elif op == LOG:
        r = math.log(a)
    elif op == LOG1P:
        r = math.log1p(a)
    elif op == LOG2:
        r = math.log2(a)
    elif op == LOG10:
        r = math.log10(a)
    elif op == SIN:
        r = math.sin(a)
    elif op == COS:
        r = math.cos(a)
    elif op == TAN:
        r = math.tan(a)
    elif op == ASIN:
        r = math.asin(a)
    elif op == ACOS:
        r = math.acos(a)
    elif op == ATAN:
        r = math.atan(a)
    elif op == SINH:
        r = math.sinh(a)
    elif op == COSH:
        r = math.cosh(a)
    elif op == TANH:
        r = math.tanh(a)
    elif op == ASINH:
        r = math.asinh(a)
    elif op == ACOSH:
        r = math.acosh(a)
    elif op == ATANH:
        r = math.atanh(a)
    elif op == ERF:
        r = math.erf(a)
    elif op == ERFC:
        r = math.erfc(a)
    elif op == ABS:
        r = abs(a)
    elif op == SIGN:
        r = (1.0 if a > 0.0 else (-1.0 if a < 0.0 else a + 0.0))
    elif op == FLOOR:
        r = np.floor(a)
    elif op == CEIL:
        r = np.ceil(a)
    elif op == RELU:
        r = (a if a > 0.0 or a != a else 0.0)
    elif op == SIGMOID:
        r = (max(math.exp(-abs(a)), 1.0 if a >= 0.0 else 0.0) / (1.0 + math.exp(-abs(a))))
    elif op == SOFTPLUS:
        r = ((a if a > 0.0 else 0.0) + math.log1p(math.exp(-abs(a))))
    elif op == MIN:
        r = (a if a <= b or a != a else b)
    elif op == MAX:
        r = (a if a >= b or a != a else b)
    elif op == ATAN2:
        r = math.atan2(a, b)
    elif op == HYPOT:
        r = math.hypot(a, b)
    elif op == GAMMA:
        r = _sf_gamma(a)
    elif op == LGAMMA:
        r = _sf_lgamma(a)
    elif op == DIGAMMA:
        r = _sf_digamma(a)
    elif op == POLYGAMMA:
        r = _sf_polygamma(a, b)
    elif op == BETA:
        r = _sf_beta(a, b)
    elif op == LBETA:
        r = _sf_lbeta(a, b)
    elif op == ERFINV:
        r = _sf_erfinv(a)
    elif op == ERFCINV:
        r = _sf_erfcinv(a)
    elif op == BESSELJ:
        r = _sf_besselj(a, b)
    elif op == BESSELY:
        r = _sf_bessely(a, b)
    elif op == XLOGY:
        r = _sf_xlogy(a, b)
    elif op == POW_PREV:
        r = (c / a if abs(c) >= 2.2250738585072014e-308 and c - c == 0.0 else math.pow(a, b - 1.0))
    else:
        r = math.nan  # unreachable: the builder emits only the opcodes above
    return r


# Ops run as one loop over a whole block of instructions (`_unary`) with vecmath's
# vectorisable functions: a point's independent calls share SIMD lanes, and across a batch's
# lanes the loop is the one the vector code needs.
VECTOR_OPCODES = (CBRT, EXP, EXPM1, LOG, LOG1P, LOG2, LOG10, SIN, COS, TAN, ATAN, SINH, COSH, TANH,
                  ASINH, ATANH, ERF, SIGMOID, SOFTPLUS, LGAMMA, DIGAMMA, SINCOS)
MAX_BLOCK = 256  # instructions a vector block gathers at most (its buffer's length)
SIMD = 8  # doubles per vector register (AVX-512); a multiple of narrower widths
_IS_VECTOR = np.zeros(len(INSTRUCTION_NAMES), np.bool_)  # a constant array in compiled code
_IS_VECTOR[list(VECTOR_OPCODES)] = True


@njit(error_model="numpy", inline="always")
def is_vector(op):
    return _IS_VECTOR[op]  # (`op in VECTOR_OPCODES` would link Numba's list code)


@njit(error_model="numpy", inline="always")
def _unary(op, src, dst, n):  # noqa: C901 - one flat dispatch is the point
    """dst[:n] = op(src[:n]) for a vector op: one loop per op, nothing decoded inside it.
    vsin/vcos reduce exactly only up to SIN_COS_LIMIT: larger (and non-finite) arguments,
    which practice never meets, go to libm (the op's scalar template), in a scalar loop for
    the block."""
    if op == CBRT:
        for j in range(n):
            dst[j] = vcbrt(src[j])
    elif op == EXP:
        for j in range(n):
            dst[j] = vexp(src[j])
    elif op == EXPM1:
        for j in range(n):
            dst[j] = vexpm1(src[j])
    elif op == LOG:
        for j in range(n):
            dst[j] = vlog(src[j])
    elif op == LOG1P:
        for j in range(n):
            dst[j] = vlog1p(src[j])
    elif op == LOG2:
        for j in range(n):
            dst[j] = vlog2(src[j])
    elif op == LOG10:
        for j in range(n):
            dst[j] = vlog10(src[j])
    elif op == SIN:
        far = 0
        for j in range(n):
            far |= _where(abs(src[j]) <= SIN_COS_LIMIT, 0, 1)
        if far:  # value by value, so a value's result never depends on its neighbours
            for j in range(n):
                x = src[j]
                if abs(x) <= SIN_COS_LIMIT:
                    dst[j] = vsin(x)
                else:
                    dst[j] = math.sin(x)
        else:
            for j in range(n):
                dst[j] = vsin(src[j])
    elif op == COS:
        far = 0
        for j in range(n):
            far |= _where(abs(src[j]) <= SIN_COS_LIMIT, 0, 1)
        if far:  # value by value, so a value's result never depends on its neighbours
            for j in range(n):
                x = src[j]
                if abs(x) <= SIN_COS_LIMIT:
                    dst[j] = vcos(x)
                else:
                    dst[j] = math.cos(x)
        else:
            for j in range(n):
                dst[j] = vcos(src[j])
    elif op == TAN:
        far = 0
        for j in range(n):
            far |= _where(abs(src[j]) <= SIN_COS_LIMIT, 0, 1)
        if far:  # value by value, so a value's result never depends on its neighbours
            for j in range(n):
                x = src[j]
                if abs(x) <= SIN_COS_LIMIT:
                    dst[j] = vtan(x)
                else:
                    dst[j] = math.tan(x)
        else:
            for j in range(n):
                dst[j] = vtan(src[j])
    elif op == ATAN:
        for j in range(n):
            dst[j] = vatan(src[j])
    elif op == SINH:
        far = 0
        for j in range(n):
            far |= _where(abs(src[j]) <= HYPERBOLIC_LIMIT, 0, 1)
        if far:  # value by value, so a value's result never depends on its neighbours
            for j in range(n):
                x = src[j]
                if abs(x) <= HYPERBOLIC_LIMIT:
                    dst[j] = vsinh(x)
                else:
                    dst[j] = math.sinh(x)
        else:
            for j in range(n):
                dst[j] = vsinh(src[j])
    elif op == COSH:
        far = 0
        for j in range(n):
            far |= _where(abs(src[j]) <= HYPERBOLIC_LIMIT, 0, 1)
        if far:  # value by value, so a value's result never depends on its neighbours
            for j in range(n):
                x = src[j]
                if abs(x) <= HYPERBOLIC_LIMIT:
                    dst[j] = vcosh(x)
                else:
                    dst[j] = math.cosh(x)
        else:
            for j in range(n):
                dst[j] = vcosh(src[j])
    elif op == TANH:
        for j in range(n):
            dst[j] = vtanh(src[j])
    elif op == ASINH:
        far = 0
        for j in range(n):
            far |= _where(abs(src[j]) <= ASINH_LIMIT, 0, 1)
        if far:  # value by value, so a value's result never depends on its neighbours
            for j in range(n):
                x = src[j]
                if abs(x) <= ASINH_LIMIT:
                    dst[j] = vasinh(x)
                else:
                    dst[j] = math.asinh(x)
        else:
            for j in range(n):
                dst[j] = vasinh(src[j])
    elif op == ATANH:
        for j in range(n):
            dst[j] = vatanh(src[j])
    elif op == ERF:
        for j in range(n):
            dst[j] = verf(src[j])
    elif op == SIGMOID:
        for j in range(n):
            dst[j] = vsigmoid(src[j])
    elif op == SOFTPLUS:
        for j in range(n):
            dst[j] = ((src[j] if src[j] > 0.0 else 0.0) + vlog1p(vexp(-abs(src[j]))))
    elif op == LGAMMA:
        far = 0
        for j in range(n):
            far |= _where(not vgammaoff(src[j]), 0, 1)
        if far:  # value by value, so a value's result never depends on its neighbours
            for j in range(n):
                x = src[j]
                if not vgammaoff(x):
                    dst[j] = vlgamma(x)
                else:
                    dst[j] = _sf_lgamma(x)
        else:
            for j in range(n):
                dst[j] = vlgamma(src[j])
    elif op == DIGAMMA:
        far = 0
        for j in range(n):
            far |= _where(not vgammaoff(src[j]), 0, 1)
        if far:  # value by value, so a value's result never depends on its neighbours
            for j in range(n):
                x = src[j]
                if not vgammaoff(x):
                    dst[j] = vdigamma(x)
                else:
                    dst[j] = _sf_digamma(x)
        else:
            for j in range(n):
                dst[j] = vdigamma(src[j])


# Ops `run_lanes` runs as one loop per op over the lanes (`_lanes`), the op decoded once per
# instruction, not per lane: loops of arithmetic, selects and intrinsics vectorise, and the
# two-operand vecmath ops (vpow, vatan2, vhypot) run their vector code. Tape batch value+grad
# per point, one core, load ~6, before (a per-lane `apply`) -> after: weibull@463 (FIT, pow)
# 37-45 -> 7.6-11 us; held out: huber_regression@432 30-32 -> 6.6-7.4, tiered_cost@333 48-54 ->
# 9-15, composition@792 9-10 -> 6-8; arithmetic-only tapes unchanged (arrhenius, cubic_eos).
# Its cost: `symgraph precompile` CPU time 50.7 -> 54.2 s (fresh caches, one after the other,
# load ~5; the machine unloaded compiles in ~10-18 s).
LANE_OPCODES = (POW, LT, LE, GT, GE, EQ, NE, WHERE, SQRT, ASIN, ACOS, ACOSH, ERFC, ABS, SIGN, FLOOR,
                CEIL, RELU, MIN, MAX, ATAN2, HYPOT, GAMMA, POLYGAMMA, BETA, LBETA, ERFINV, ERFCINV,
                BESSELJ, BESSELY, XLOGY, POW_PREV)
_IS_LANE = np.zeros(len(INSTRUCTION_NAMES), np.bool_)
_IS_LANE[list(LANE_OPCODES)] = True
_ARITY = np.array(ARITIES, np.int64)


@njit(error_model="numpy", inline="always")
def is_lane(op):
    return _IS_LANE[op]


@njit(error_model="numpy")
def _lanes(op, ra, rb, rc, rt, n):  # noqa: C901 - one flat dispatch is the point
    """rt[:n] = op(ra[:n], rb[:n], rc[:n]) for a lane op (rt is none of the operands' rows):
    each op by its op-table template (``nb``; the two-operand vecmath ops by their ``lanes``
    one). vpow and vatan2 are exact only where their flag (vpowoff, vatan2off) is false: such
    lanes are recomputed with the op's libm template in a scalar loop for the block, as the
    straight-line lane kernels do. Not inlined: one compiled copy, called per instruction."""
    if op == POW:
        far = 0
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = vpow(a, b)
            far |= _where(vpowoff(a, b), 1, 0)
        if far:  # value by value, so a lane's result never depends on its neighbours
            for j in range(n):
                a = ra[j]
                b = rb[j]
                if vpowoff(a, b):
                    rt[j] = a ** b
    elif op == LT:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = (1.0 if a < b else 0.0)
    elif op == LE:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = (1.0 if a <= b else 0.0)
    elif op == GT:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = (1.0 if a > b else 0.0)
    elif op == GE:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = (1.0 if a >= b else 0.0)
    elif op == EQ:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = (1.0 if a == b else 0.0)
    elif op == NE:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = (1.0 if a != b else 0.0)
    elif op == WHERE:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            c = rc[j]
            rt[j] = (b if a != 0.0 else c)
    elif op == SQRT:
        for j in range(n):
            a = ra[j]
            rt[j] = math.sqrt(a)
    elif op == ASIN:
        for j in range(n):
            a = ra[j]
            rt[j] = math.asin(a)
    elif op == ACOS:
        for j in range(n):
            a = ra[j]
            rt[j] = math.acos(a)
    elif op == ACOSH:
        for j in range(n):
            a = ra[j]
            rt[j] = math.acosh(a)
    elif op == ERFC:
        for j in range(n):
            a = ra[j]
            rt[j] = math.erfc(a)
    elif op == ABS:
        for j in range(n):
            a = ra[j]
            rt[j] = abs(a)
    elif op == SIGN:
        for j in range(n):
            a = ra[j]
            rt[j] = (1.0 if a > 0.0 else (-1.0 if a < 0.0 else a + 0.0))
    elif op == FLOOR:
        for j in range(n):
            a = ra[j]
            rt[j] = np.floor(a)
    elif op == CEIL:
        for j in range(n):
            a = ra[j]
            rt[j] = np.ceil(a)
    elif op == RELU:
        for j in range(n):
            a = ra[j]
            rt[j] = (a if a > 0.0 or a != a else 0.0)
    elif op == MIN:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = (a if a <= b or a != a else b)
    elif op == MAX:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = (a if a >= b or a != a else b)
    elif op == ATAN2:
        far = 0
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = vatan2(a, b)
            far |= _where(vatan2off(a, b), 1, 0)
        if far:  # value by value, so a lane's result never depends on its neighbours
            for j in range(n):
                a = ra[j]
                b = rb[j]
                if vatan2off(a, b):
                    rt[j] = math.atan2(a, b)
    elif op == HYPOT:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = vhypot(a, b)
    elif op == GAMMA:
        for j in range(n):
            a = ra[j]
            rt[j] = _sf_gamma(a)
    elif op == POLYGAMMA:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = _sf_polygamma(a, b)
    elif op == BETA:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = _sf_beta(a, b)
    elif op == LBETA:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = _sf_lbeta(a, b)
    elif op == ERFINV:
        for j in range(n):
            a = ra[j]
            rt[j] = _sf_erfinv(a)
    elif op == ERFCINV:
        for j in range(n):
            a = ra[j]
            rt[j] = _sf_erfcinv(a)
    elif op == BESSELJ:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = _sf_besselj(a, b)
    elif op == BESSELY:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = _sf_bessely(a, b)
    elif op == XLOGY:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            rt[j] = vxlogy(a, b)
    elif op == POW_PREV:
        for j in range(n):
            a = ra[j]
            b = rb[j]
            c = rc[j]
            rt[j] = (c / a if abs(c) >= 2.2250738585072014e-308 and c - c == 0.0 else math.pow(a, b - 1.0))  # noqa: E501


# Fused instructions (`symgraph.backends.tape.opcodes.FUSED`, made by the tape's `fuse` pass):
# two arithmetic instructions as one, the same operations in the same order. On the lanes, a
# lane block is loaded and stored once instead of twice and one dispatch serves both.
FUSED_OPCODES = (ADD3, MUL3, MULADD, SUB3, MULSUB)
_IS_FUSED = np.zeros(len(INSTRUCTION_NAMES), np.bool_)
_IS_FUSED[list(FUSED_OPCODES)] = True


@njit(error_model="numpy", inline="always")
def is_fused(op):
    return _IS_FUSED[op]


@njit(error_model="numpy", inline="always")
def _fused_rows(op, regs, operands, targets, s, e):
    """The block s..e of fused instructions `op` on one point's registers `regs`."""
    if op == ADD3:
        for i in range(s, e):
            a, b, c = (regs[np.uint32(operands[i, 0])], regs[np.uint32(operands[i, 1])],
                       regs[np.uint32(operands[i, 2])])
            regs[np.uint32(targets[i])] = a + b + c
    elif op == MUL3:
        for i in range(s, e):
            a, b, c = (regs[np.uint32(operands[i, 0])], regs[np.uint32(operands[i, 1])],
                       regs[np.uint32(operands[i, 2])])
            regs[np.uint32(targets[i])] = a * b * c
    elif op == MULADD:
        for i in range(s, e):
            a, b, c = (regs[np.uint32(operands[i, 0])], regs[np.uint32(operands[i, 1])],
                       regs[np.uint32(operands[i, 2])])
            regs[np.uint32(targets[i])] = a * b + c
    elif op == SUB3:
        for i in range(s, e):
            a, b, c = (regs[np.uint32(operands[i, 0])], regs[np.uint32(operands[i, 1])],
                       regs[np.uint32(operands[i, 2])])
            regs[np.uint32(targets[i])] = a - b - c
    elif op == MULSUB:
        for i in range(s, e):
            a, b, c = (regs[np.uint32(operands[i, 0])], regs[np.uint32(operands[i, 1])],
                       regs[np.uint32(operands[i, 2])])
            regs[np.uint32(targets[i])] = c - a * b


# Immediate instructions (`symgraph.backends.tape.opcodes.IMMEDIATE`, made for a batch's lanes
# by `symgraph.backends.tape.immediate`): an instruction whose operand in one slot (per code,
# or -1) is a constant, read once as the number `k` (from the tape's constants) instead of as a
# row of lanes.
_IMMEDIATE_SLOT = np.full(len(INSTRUCTION_NAMES), -1, np.int64)
_IMMEDIATE_SLOT[KMUL] = 0
_IMMEDIATE_SLOT[KADD] = 0
_IMMEDIATE_SLOT[KSUB] = 0
_IMMEDIATE_SLOT[KDIV] = 0
_IMMEDIATE_SLOT[KMUL3] = 0
_IMMEDIATE_SLOT[MUL3K] = 2
_IMMEDIATE_SLOT[KMULADD] = 0
_IMMEDIATE_SLOT[MULSUBK] = 2


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
        elif is_fused(op):
            _fused_rows(op, regs, operands, targets, s, e)
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
def run_lanes(opcodes, operands, targets, regs, lanes, constants, n_inputs):
    """`run` on `lanes` points at once: `regs` is (registers, >= lanes), a row per register;
    `constants` the tape's (in registers n_inputs ...), which immediate instructions read.

    Each instruction is decoded once and is one loop over the lanes, which LLVM vectorises for
    the arithmetic ops: dispatch is shared by the lanes, and the lanes are SIMD lanes. One
    dispatch per instruction, no blocks: the arithmetic ops are one chain of tests of `op`,
    which LLVM makes one switch (written here: in an inlined function returning whether it
    took the op, the lanes ran 1.4x slower: cubic_eos@74 4.2 -> 2.98 us, arrhenius@993 10.9 ->
    8.6, run_batch per point, one process, load 7.9). No test of which operand a target is: a
    batch's tape keeps every target apart from its operands' rows (`module.lane_tape`), so
    LLVM's runtime check that the rows do not overlap passes and the vector loop runs (a
    target that is an operand, as in other tapes, still gives the right numbers, in a scalar
    loop). Every op but the arithmetic, vector and sincos ones runs its own loop in `_lanes`.
    """
    for i in range(opcodes.shape[0]):
        op = opcodes[i]
        ti, ai = np.uint32(targets[i]), np.uint32(operands[i, 0])
        bi, ci = np.uint32(operands[i, 1]), np.uint32(operands[i, 2])
        if op == ADD:
            for j in range(lanes):
                regs[ti, j] = regs[ai, j] + regs[bi, j]
        elif op == MUL:
            for j in range(lanes):
                regs[ti, j] = regs[ai, j] * regs[bi, j]
        elif op == SUB:
            for j in range(lanes):
                regs[ti, j] = regs[ai, j] - regs[bi, j]
        elif op == DIV:
            for j in range(lanes):
                regs[ti, j] = regs[ai, j] / regs[bi, j]
        elif op == NMUL:
            for j in range(lanes):
                regs[ti, j] = -(regs[ai, j] * regs[bi, j])
        elif op == NEG:
            for j in range(lanes):
                regs[ti, j] = -regs[ai, j]
        elif op == ADD3:
            for j in range(lanes):
                regs[ti, j] = regs[ai, j] + regs[bi, j] + regs[ci, j]
        elif op == MUL3:
            for j in range(lanes):
                regs[ti, j] = regs[ai, j] * regs[bi, j] * regs[ci, j]
        elif op == MULADD:
            for j in range(lanes):
                regs[ti, j] = regs[ai, j] * regs[bi, j] + regs[ci, j]
        elif op == SUB3:
            for j in range(lanes):
                regs[ti, j] = regs[ai, j] - regs[bi, j] - regs[ci, j]
        elif op == MULSUB:
            for j in range(lanes):
                regs[ti, j] = regs[ci, j] - regs[ai, j] * regs[bi, j]
        elif op == KMUL:
            k = constants[np.uint32(ai - n_inputs)]
            for j in range(lanes):
                regs[ti, j] = k * regs[bi, j]
        elif op == KADD:
            k = constants[np.uint32(ai - n_inputs)]
            for j in range(lanes):
                regs[ti, j] = k + regs[bi, j]
        elif op == KSUB:
            k = constants[np.uint32(ai - n_inputs)]
            for j in range(lanes):
                regs[ti, j] = k - regs[bi, j]
        elif op == KDIV:
            k = constants[np.uint32(ai - n_inputs)]
            for j in range(lanes):
                regs[ti, j] = k / regs[bi, j]
        elif op == KMUL3:
            k = constants[np.uint32(ai - n_inputs)]
            for j in range(lanes):
                regs[ti, j] = k * regs[bi, j] * regs[ci, j]
        elif op == MUL3K:
            k = constants[np.uint32(ci - n_inputs)]
            for j in range(lanes):
                regs[ti, j] = regs[ai, j] * regs[bi, j] * k
        elif op == KMULADD:
            k = constants[np.uint32(ai - n_inputs)]
            for j in range(lanes):
                regs[ti, j] = k * regs[bi, j] + regs[ci, j]
        elif op == MULSUBK:
            k = constants[np.uint32(ci - n_inputs)]
            for j in range(lanes):
                regs[ti, j] = k - regs[ai, j] * regs[bi, j]
        elif op == SINCOS:
            scratch = regs[regs.shape[0] - 1]  # a row of its own: no overlap for LLVM to check
            a = regs[ai]
            for j in range(lanes):  # (a slice copy would link Numba's string code)
                scratch[j] = a[j]
            _sincos(scratch, regs[ti], regs[ci], lanes)
        elif is_vector(op):
            t = regs[ti]
            if ti == ai:  # one array for both: LLVM sees no overlap to check at run time
                _unary(op, t, t, lanes)
            else:
                _unary(op, regs[ai], t, lanes)
        elif is_lane(op):
            scratch = regs[regs.shape[0] - 1]
            arity = _ARITY[op]
            # A target that is an operand's row is computed into the scratch row and copied: a
            # fix-up loop (vpow's) reads the operands after the vector loop.
            alias = ti == ai or (arity > 1 and ti == bi) or (arity > 2 and ti == ci)
            _lanes(op, regs[ai], regs[bi], regs[ci], scratch if alias else regs[ti], lanes)
            if alias:
                t = regs[ti]
                for j in range(lanes):
                    t[j] = scratch[j]
        else:  # every op has a loop above: unreachable, kept as `run` computes
            t, a = regs[ti], regs[ai]
            b, c = regs[bi], regs[ci]
            for j in range(lanes):
                t[j] = apply(op, a[j], b[j], c[j])


@njit(cache=True, error_model="numpy", nogil=True)
def run_batch(opcodes, operands, targets, blocks, constants, outputs, n_registers, X, OUT,
              regs):
    """Rows of `X` (N, n_inputs) into rows of `OUT` (N, len(outputs)), as many points at a
    time as `regs` (n_registers + 1, width) has columns: the caller's register file, so no
    point allocates (its last row is scratch for sincos). Serial and without the GIL:
    `symgraph.runtime.batching` runs parts of a batch on several threads."""
    rows, n, width = X.shape[0], X.shape[1], regs.shape[1]
    for k in range(constants.shape[0]):
        for j in range(width):
            regs[n + k, j] = constants[k]  # constants are never overwritten
    for first in range(0, rows, width):
        lanes = width if rows - first > width else rows - first
        for j in range(lanes):
            for k in range(n):
                regs[k, j] = X[first + j, k]
        run_lanes(opcodes, operands, targets, regs, lanes, constants, n)
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
