"""How an 8 x 8 tile of one C-contiguous float64 array is copied into another transposed:
eight vector loads of row pieces, the shuffle network of `transpose.transpose`, eight vector
stores. The fused sums' batch kernels (backends.numba.sum_lanes) copy a block's points into
the variables' rows and the gradient's rows back into the points with it: a loop of scalar
copies took ~1 ns a value, 2.75 of fpu_chain@625's 3.8 us a point. The values copied are the
same bits. Part of the runtime adapter (Numba's typing and llvmlite's builder)."""

from __future__ import annotations

from numba import types
from numba.core import cgutils

from .transpose import _vector_pointer, transpose

TILE = 8


def tile_typer(A, a0, a1, B, b0, b1):
    """The signature and code of ``tile(A, a0, a1, B, b0, b1)``: ``B[b0 + c, b1 + r] =
    A[a0 + r, a1 + c]`` for r, c < 8; None (no match) but for C-contiguous 2-d float64
    arrays and integer indices."""
    arrays = (A, B)
    if not all(isinstance(t, types.Array) and t.ndim == 2 and t.layout == "C"
               and t.dtype == types.float64 for t in arrays):
        return None
    if not all(isinstance(t, types.Integer) for t in (a0, a1, b0, b1)):
        return None
    sig = types.none(A, a0, a1, B, b0, b1)

    def codegen(context, builder, sig, args):
        aty, _, _, bty = sig.args[:4]
        a, b = (context.make_array(t)(context, builder, v)
                for t, v in ((aty, args[0]), (bty, args[3])))
        a0, a1, b0, b1 = (context.cast(builder, v, t, types.intp)
                          for v, t in zip((args[1], args[2], args[4], args[5]),
                                          (sig.args[1], sig.args[2], sig.args[4], sig.args[5])))

        def at(k):
            return context.get_constant(types.intp, k)

        rows = [builder.load(_vector_pointer(builder, cgutils.get_item_pointer(
            context, builder, aty, a, [builder.add(a0, at(r)), a1]), TILE), align=8)
            for r in range(TILE)]
        for c, column in enumerate(transpose(builder, rows)):
            pointer = cgutils.get_item_pointer(context, builder, bty, b,
                                               [builder.add(b0, at(c)), b1])
            builder.store(column, _vector_pointer(builder, pointer, TILE), align=8)
        return context.get_dummy_value()

    return sig, codegen
