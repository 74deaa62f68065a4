"""How a lane kernel compiles: the loops of ``NAME_lanes`` emitted as loops in LLVM IR.

``NAME_lanes`` (symgraph.backends.numba.batch) runs the steps on a block of points, one loop
over the block per segment. The batch kernel compiles it through
`symgraph.backends.numba.runtime.lane_loops`: the loops become loops in LLVM IR (which LLVM
vectorises as it would Numba's), each step is lowered as a row kernel's steps are
(`lowering.compile_steps`), and ``_T`` is a scratch array on the stack. Numba's front end types
one call instead of every line (~2 ms a line), and the lane code is no function of its own that
LLVM compiles, then again inside the batch loop: half the compile time, the same machine loops.
Part of the runtime adapter (Numba's internals: contexts, cgutils, llvmlite's builder).
"""

from __future__ import annotations

import ast

from numba import types
from numba.core import cgutils

from . import transpose
from .lowering import compile_steps


def lower_lanes(loops, steps, slots, block, chunk, widths, interleave, context, builder,
                signature, args):
    """Emit the loops `loops` (of a ``NAME_lanes``) into an intrinsic's code (X, OUT, c) that
    runs chunk c; a fix-up loop's call (``NAME_steps(_X[_s + _j], _OUT[_s + _j])``) runs the
    statements `steps`. The loops numbered in `interleave` (counting the function's for-loops
    from 0) run a whole block as its two halves at once, statement by statement (`_halves`)."""
    intp, impls = types.intp, {}
    (xty, oty, cty), (x, out, c) = signature.args, args
    arrays = {"_X": (xty, context.make_array(xty)(context, builder, x)),
              "_OUT": (oty, context.make_array(oty)(context, builder, out))}
    scratch = cgutils.alloca_once(builder, context.get_value_type(types.float64), size=slots)
    scratch.align = 64  # whole cache lines: a slot's vector loads never straddle two
    flags = cgutils.alloca_once(builder, context.get_data_type(types.boolean), size=block)
    n = cgutils.unpack_tuple(builder, arrays["_X"][1].shape)[0]
    start = builder.mul(context.cast(builder, c, cty, intp), context.get_constant(intp, chunk))
    end = builder.add(start, context.get_constant(intp, chunk))
    stop = builder.select(builder.icmp_signed("<", n, end), n, end)
    with cgutils.for_range_slice(builder, start, stop, context.get_constant(intp, block)) as (
            s, _):
        left = builder.sub(n, s)
        m = builder.select(builder.icmp_signed("<", left, context.get_constant(intp, block)),
                           left, context.get_constant(intp, block))
        for number, loop in enumerate(loop for loop in loops if isinstance(loop, ast.For)):
            if number in interleave:
                _halves(context, builder, loop, arrays, scratch, flags, widths, s, m, block, impls)
                continue
            first = _transposed(context, builder, loop, arrays, scratch, flags, widths, s, m)
            with cgutils.for_range_slice(builder, first, m, context.get_constant(intp, 1)) as (
                    j, _):
                j = _Index(j)
                pointer = _pointers(context, builder, arrays, scratch, flags, widths, s, j.index)
                if isinstance(loop.body[0], ast.If):  # libm for the flagged points: rarely
                    test = pointer(loop.body[0].test)[1]
                    call = loop.body[0].body[0].value
                    row = {"_x": call.args[0], "_out": call.args[1]}  # _X[_s + _j]...
                    with cgutils.if_unlikely(builder, context.unpack_value(
                            builder, types.boolean, test)):
                        compile_steps(context, builder, lambda node, row=row, pointer=pointer:
                                      pointer(row[node.value.id], node.slice), impls)(steps)
                    continue
                compile_steps(context, builder, pointer, impls)(loop.body)
    return context.get_dummy_value()


def _pointers(context, builder, arrays, scratch, flags, widths, s, j):
    """Where a subscript of lane code points for point s + j: _T[offset + _j], _X[_s + _j, k],
    _OUT[_s + _j, k], _F[_j] (a row's `column` given apart for a fix-up's _x[k], _out[k])."""
    intp = types.intp

    def pointer(node, column=None):
        if node.value.id == "_T":
            offset = context.get_constant(intp, node.slice.left.value)
            return types.float64, builder.gep(scratch, [builder.add(offset, j)])
        if node.value.id == "_F":
            return types.boolean, builder.gep(flags, [j])
        ty, ary = arrays[node.value.id]
        column = node.slice.elts[1] if column is None else column
        width = widths.get(node.value.id)
        if width is None:
            return ty.dtype, cgutils.get_item_pointer(
                context, builder, ty, ary,
                [builder.add(s, j), context.get_constant(intp, column.value)])
        row = builder.mul(builder.add(s, j), context.get_constant(intp, width))
        return ty.dtype, builder.gep(ary.data, [
            builder.add(row, context.get_constant(intp, column.value))])

    return pointer


def _halves(context, builder, loop, arrays, scratch, flags, widths, s, m, block, impls):
    """A compute loop on a whole block as two interleaved halves: each statement for point j,
    then for point j + block/2 (j < block/2), so the out-of-order core has two independent
    chains in its window where one latency-bound chain (exp -> divide -> log -> pow...) kept
    it waiting. A partial block (a batch's last) runs the loop as it is. The same operations
    on the same operands: the same bits."""
    intp = types.intp
    half = block // 2
    full = builder.icmp_signed("==", m, context.get_constant(intp, block))
    with builder.if_else(full) as (whole, partial):
        with whole:
            with cgutils.for_range(builder, context.get_constant(intp, half)) as j:
                runs = [compile_steps(context, builder, _pointers(
                    context, builder, arrays, scratch, flags, widths, s,
                    builder.add(j.index, context.get_constant(intp, k * half))), impls)
                    for k in (0, 1)]
                for statement in loop.body:
                    for run in runs:
                        run([statement])
        with partial:
            with cgutils.for_range(builder, m) as j:
                compile_steps(context, builder, _pointers(
                    context, builder, arrays, scratch, flags, widths, s, j.index), impls)(
                    loop.body)


class _Index:
    """A loop's index as `cgutils.for_range` gives it (``.index``)."""

    def __init__(self, index) -> None:
        self.index = index


def _transposed(context, builder, loop, arrays, scratch, flags, widths, s, m):
    """For a copy of wide C-contiguous rows into slots or out of them: the whole groups of V
    points of the block copied by vector transposes (`transpose`); returns the first point
    left for the loop's own statements (0 for every other loop). The flags ``_F[_j] = False``
    of a copy-in loop are cleared for every point first."""
    intp = types.intp
    zero = context.get_constant(intp, 0)
    for name, find, emit in (("_X", transpose.copy_in_columns, transpose.emit_copy_in),
                             ("_OUT", transpose.copy_out_columns, transpose.emit_copy_out)):
        ty, ary = arrays[name]
        columns = find(loop)
        if columns is None or name in widths or ty.layout != "C":
            continue
        v = transpose.width_for(len(columns))
        if len(columns) < v:
            return zero
        if any(transpose._subscript(st.targets[0], "_F") for st in loop.body):
            false = context.get_constant(types.boolean, False)
            with cgutils.for_range(builder, m) as j:
                context.pack_value(builder, types.boolean, false, builder.gep(flags, [j.index]))
        groups = builder.udiv(m, context.get_constant(intp, v))
        emit(context, builder, ty, ary, scratch, s, groups,
             columns if name == "_OUT" else list(columns), v)
        return builder.mul(groups, context.get_constant(intp, v))
    return zero
