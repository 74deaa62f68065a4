"""How a reduction's lane kernel compiles: the loops of ``NAME_lanes`` (backends.numba.reduce)
emitted as loops in LLVM IR, their row values added into per-lane accumulators on the stack.

``NAME_lanes(_p, _d0, .., _T, _A, _s, _m)`` is plain Python: parameter loads (``w = _p[3]``),
then loops over the rows ``_s + _j`` of a block (``for _j in range(_m):``) that read data
(``_d1[_s + _j, 2]``), run steps, keep values crossing loops in ``_T[offset + _j]`` and add each
output slot k's row value into ``_A[k * block + _j]``. `lower_sums` emits, for chunk c of a
batch: the parameter loads once, ``_A`` zeroed, the loops on each block of the chunk (LLVM
vectorises them across rows: ``_A``'s lanes are independent sums), then each slot's `block`
lanes added in a fixed tree into ``_ACC[c, k]``. The order of every addition depends on the
number of rows only. Part of the runtime adapter (Numba's internals, as `lanes`).
"""

from __future__ import annotations

import ast

from numba import types
from numba.core import cgutils

from .lowering import compile_steps


def accumulations(body):
    """`body` with each ``_A[i] += v`` spelled ``_A[i] = _A[i] + v`` (what compile_steps
    lowers), recursively in loops."""
    out = []
    for statement in body:
        if isinstance(statement, ast.AugAssign) and isinstance(statement.op, ast.Add):
            load = ast.Subscript(statement.target.value, statement.target.slice, ast.Load())
            statement = ast.Assign([statement.target], ast.BinOp(load, ast.Add(),
                                                                 statement.value))
        elif isinstance(statement, ast.For):
            statement = ast.For(statement.target, statement.iter,
                                accumulations(statement.body), [])
        out.append(statement)
    return out


def tree_sum(values, add):
    """`values` added pairwise, neighbours first: ((v0 + v1) + (v2 + v3)) + ..."""
    while len(values) > 1:
        values = [add(a, b) for a, b in zip(values[::2], values[1::2])] + (
            values[-1:] if len(values) % 2 else [])
    return values[0]


def lower_sums(body, slots, block, chunk, width, columns, context, builder, signature, args):
    """Emit `body` (a ``NAME_lanes``'s statements) as the code of an intrinsic (P, D, ACC, c)
    summing chunk c's rows into ACC[c]; `columns[g]` is data array g's row length, taken as a
    constant stride where the array is C-contiguous."""
    intp, f64 = types.intp, types.float64
    (pty, dty, aty, cty), (p, d, acc, c) = signature.args, args
    const = lambda v: context.get_constant(intp, v)  # noqa: E731
    arrays = {"_p": (pty, context.make_array(pty)(context, builder, p), None),
              "_ACC": (aty, context.make_array(aty)(context, builder, acc), None)}
    for g, (ty, value) in enumerate(zip(dty, cgutils.unpack_tuple(builder, d))):
        arrays[f"_d{g}"] = (ty, context.make_array(ty)(context, builder, value),
                            columns[g] if ty.layout == "C" else None)
    scratch = cgutils.alloca_once(builder, context.get_value_type(f64), size=max(1, slots))
    lanes = cgutils.alloca_once(builder, context.get_value_type(f64), size=width * block)
    scratch.align = lanes.align = 64
    n = cgutils.unpack_tuple(builder, arrays["_d0"][1].shape)[0]
    start = builder.mul(context.cast(builder, c, cty, intp), const(chunk))
    end = builder.add(start, const(chunk))
    stop = builder.select(builder.icmp_signed("<", n, end), n, end)
    zero = context.get_constant(f64, 0.0)
    with cgutils.for_range(builder, const(width * block)) as k:
        builder.store(zero, builder.gep(lanes, [k.index]))
    state = {"s": None, "j": None}

    def pointer(node):
        name = node.value.id
        if name in ("_T", "_A"):
            base = scratch if name == "_T" else lanes
            offset = const(node.slice.left.value)
            return f64, builder.gep(base, [builder.add(offset, state["j"])])
        ty, ary, stride = arrays[name]
        if name == "_p":
            return ty.dtype, cgutils.get_item_pointer(context, builder, ty, ary,
                                                      [const(node.slice.value)])
        row, column = builder.add(state["s"], state["j"]), node.slice.elts[1].value
        if stride is None:
            return ty.dtype, cgutils.get_item_pointer(context, builder, ty, ary,
                                                      [row, const(column)])
        return ty.dtype, builder.gep(ary.data, [builder.add(builder.mul(row, const(stride)),
                                                            const(column))])

    run = compile_steps(context, builder, pointer, {})
    body = accumulations(body)
    run([s for s in body if isinstance(s, ast.Assign)])  # the parameters: once a chunk
    with cgutils.for_range_slice(builder, start, stop, const(block)) as (s, _):
        left = builder.sub(stop, s)
        m = builder.select(builder.icmp_signed("<", left, const(block)), left, const(block))
        state["s"] = s
        for loop in body:
            if isinstance(loop, ast.For):
                with cgutils.for_range(builder, m) as j:
                    state["j"] = j.index
                    run(loop.body)
    _, out = arrays["_ACC"][:2]
    with cgutils.for_range(builder, const(width)) as k:
        base = builder.mul(k.index, const(block))
        values = [builder.load(builder.gep(lanes, [builder.add(base, const(j))]))
                  for j in range(block)]
        total = tree_sum(values, builder.fadd)
        builder.store(total, cgutils.get_item_pointer(context, builder, aty, out,
                                                      [context.cast(builder, c, cty, intp),
                                                       k.index]))
    return context.get_dummy_value()
