"""The select, bit casts, fused multiply-add and exact product error vecmath's functions are
built of, each one LLVM instruction.

Part of the runtime adapter (they are intrinsics: llvmlite's builder, Numba's contexts). When
the adapter cannot use Numba's internals, they are plain ``@njit`` functions with the same
results: a branch and two array views, which stop LLVM vectorising the loops that use them.
"""

from __future__ import annotations

from numba import njit, types

from . import LOWERED

if LOWERED:
    from numba.extending import intrinsic

    @intrinsic
    def _bits(typingctx, x):
        """The 64 bits of a float64 as an int64 (a free register move, vectorises)."""
        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], context.get_value_type(types.int64))
        return types.int64(types.float64), codegen

    @intrinsic
    def _where(typingctx, cond, a, b):
        """`a if cond else b` as one select instruction: Numba compiles if-expressions to
        branches, and LLVM's vectoriser gives up on a loop with two of them in a row."""
        def codegen(context, builder, sig, args):
            return builder.select(args[0], args[1], args[2])
        return a(types.boolean, a, a), codegen

    @intrinsic
    def _float(typingctx, n):
        """The float64 whose 64 bits are the int64 `n`."""
        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], context.get_value_type(types.float64))
        return types.float64(types.int64), codegen

    @intrinsic
    def _mul_error(typingctx, a, b, p):
        """a * b - p, exactly when p is a * b rounded (one fused multiply-add: LLVM's fma, a
        vector instruction with FMA hardware, correctly rounded libm's fma without)."""
        def codegen(context, builder, sig, args):
            return builder.fma(args[0], args[1], builder.fneg(args[2]))
        return types.float64(types.float64, types.float64, types.float64), codegen

    @intrinsic
    def _fma(typingctx, a, b, c):
        """a * b + c rounded once (LLVM's fma: one vector instruction with FMA hardware,
        correctly rounded libm's fma without): a polynomial's Horner step."""
        def codegen(context, builder, sig, args):
            return builder.fma(args[0], args[1], args[2])
        return types.float64(types.float64, types.float64, types.float64), codegen

else:
    import numpy as np

    @njit(error_model="numpy", forceinline=True)
    def _bits(x):
        return np.full(1, x, np.float64).view(np.int64)[0]

    @njit(error_model="numpy", forceinline=True)
    def _where(cond, a, b):
        return a if cond else b

    @njit(error_model="numpy", forceinline=True)
    def _float(n):
        return np.full(1, n, np.int64).view(np.float64)[0]

    @njit(error_model="numpy", forceinline=True)
    def _mul_error(a, b, p):
        # Dekker's exact product (splits into 26-bit halves): the same value as the fma
        h = 134217729.0 * a
        a1 = h - (h - a)
        a2 = a - a1
        h = 134217729.0 * b
        b1 = h - (h - b)
        b2 = b - b1
        return ((a1 * b1 - p) + a1 * b2 + a2 * b1) + a2 * b2

    @njit(error_model="numpy", forceinline=True)
    def _fma(a, b, c):
        # a * b exactly as p + e (Dekker), then p + c + e: the fused result but in rare cases
        # of a tie or of cancellation against e (one rounding more); the same accuracy class
        p = a * b
        e = _mul_error(a, b, p)
        s = p + c
        v = s - p
        t = (p - (s - v)) + (c - v)  # TwoSum: s + t = p + c exactly
        return s + (t + e)
