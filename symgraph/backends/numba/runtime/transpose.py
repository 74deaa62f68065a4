"""How a lane kernel copies wide rows into its slots and back: vector transposes in LLVM IR.

A lane kernel's first loop copies each input column of a block's rows into a slot
(``_T[offset + _j] = _X[_s + _j, k]``) and its last loop copies slots into the rows of _OUT.
Rows longer than MAX_CONSTANT_WIDTH have no constant stride (`lanes`), so LLVM keeps these
loops scalar: a load and a store per value, about half the time of a kernel like fpu_chain@13
(26 inputs, 27 outputs). Here the copies are emitted as transposes instead: for each group of
V points (V = 8, or 4 for rows shorter than 8) and each run of V columns, V unaligned vector
loads of row pieces, a shuffle network (log2 V stages of V shuffles), and V vector stores of
column pieces (the reverse for outputs). A row whose length is no multiple of V ends with a
run that overlaps the one before (the same values loaded or stored twice). The points of a
block beyond its last whole group of V go through the scalar statements. The values copied
are the same bits: only the order of the loads and stores changes.

Used only for C-contiguous arrays (a row's columns adjacent); the caller checks the rows are
at least as long as the columns it names. Part of the runtime adapter (llvmlite's builder).
"""

from __future__ import annotations

import ast

from llvmlite import ir
from numba import types
from numba.core import cgutils

_F64 = ir.DoubleType()


def copy_in_columns(loop: ast.For) -> list[tuple[int, int]] | None:
    """[(column, slot offset)] when every statement of `loop` is ``_T[o + _j] = _X[_s + _j, k]``
    (a lane kernel's copy of inputs into slots; flags ``_F[_j] = False`` aside), else None."""
    found = []
    for statement in loop.body:
        if not isinstance(statement, ast.Assign):
            return None
        target, value = statement.targets[0], statement.value
        if _subscript(target, "_F"):
            continue
        if not (_subscript(target, "_T") and _subscript(value, "_X")):
            return None
        found.append((value.slice.elts[1].value, target.slice.left.value))
    return found or None


def copy_out_columns(loop: ast.For) -> dict[int, int | float] | None:
    """{column: slot offset (int) or constant (float)} when every statement of `loop` is
    ``_OUT[_s + _j, k] = _T[o + _j]`` or a constant and the columns are 0 .. n-1 (a lane
    kernel's copy of its outputs), else None."""
    found: dict[int, int | float] = {}
    for statement in loop.body:
        if not isinstance(statement, ast.Assign):
            return None
        target, value = statement.targets[0], statement.value
        if not _subscript(target, "_OUT"):
            return None
        column = target.slice.elts[1].value
        if _subscript(value, "_T"):
            found[column] = value.slice.left.value
        elif isinstance(value, ast.Constant) and isinstance(value.value, float):
            found[column] = value.value
        elif (isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub)
              and isinstance(value.operand, ast.Constant)
              and isinstance(value.operand.value, float)):
            found[column] = -value.operand.value
        else:
            return None
    return found if sorted(found) == list(range(len(found))) else None


def _subscript(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id == name)


def width_for(columns: int) -> int:
    """Points (and columns) per transpose for rows of `columns` used columns."""
    return 8 if columns >= 8 else 4


def runs(width: int, v: int) -> list[int]:
    """First columns of the runs of `v` columns covering 0 .. width-1 (the last overlaps)."""
    starts = list(range(0, width - v + 1, v))
    if width % v:
        starts.append(width - v)
    return starts


def transpose(builder: ir.IRBuilder, rows: list) -> list:
    """The columns of the V x V matrix whose rows are the V vectors `rows`: for h = V/2 ..
    1, rows i and i + h (i & h == 0) swap their off-diagonal h x h blocks."""
    v = len(rows)
    rows = list(rows)
    h = v // 2
    while h:
        low = [p if not p & h else v + p - h for p in range(v)]
        high = [p + h if not p & h else v + p for p in range(v)]
        for i in range(v):
            if not i & h:
                a, b = rows[i], rows[i + h]
                rows[i] = builder.shuffle_vector(a, b, _mask(low))
                rows[i + h] = builder.shuffle_vector(a, b, _mask(high))
        h //= 2
    return rows


def _mask(indices: list[int]) -> ir.Constant:
    return ir.Constant(ir.VectorType(ir.IntType(32), len(indices)), indices)


def _vector_pointer(builder: ir.IRBuilder, pointer, v: int):
    return builder.bitcast(pointer, ir.PointerType(ir.VectorType(_F64, v)))


def emit_copy_in(context, builder, xty, xs, scratch, s, groups, columns, v) -> None:
    """Columns [(k, offset)] of rows s .. s + groups*v - 1 of X (array `xs` of type `xty`)
    into the slots, `groups` groups of `v` points."""
    intp = types.intp
    wanted = dict(columns)
    width = max(wanted) + 1
    with cgutils.for_range(builder, groups) as g:
        j0 = builder.mul(g.index, context.get_constant(intp, v))
        covered: set[int] = set()
        for k0 in runs(width, v):
            mine = [c for c in range(v) if k0 + c in wanted and k0 + c not in covered]
            if not mine:
                continue
            covered.update(k0 + c for c in mine)
            rows = []
            for r in range(v):
                row = builder.add(s, builder.add(j0, context.get_constant(intp, r)))
                ptr = cgutils.get_item_pointer(context, builder, xty, xs,
                                               [row, context.get_constant(intp, k0)])
                rows.append(builder.load(_vector_pointer(builder, ptr, v), align=8))
            cols = transpose(builder, rows)
            for c in mine:
                ptr = scratch.at(builder, wanted[k0 + c], j0)
                builder.store(cols[c], _vector_pointer(builder, ptr, v), align=8 * v)


def emit_copy_out(context, builder, oty, outs, scratch, s, groups, columns, v) -> None:
    """Columns {k: slot offset or constant} into rows s .. s + groups*v - 1 of OUT (array
    `outs` of type `oty`), `groups` groups of `v` points. A group's rows are stored one after
    the other, each from its first column to its last: one ascending stretch of memory, which
    the store queue drains line by line where a run's v stores to v rows kept v lines waiting
    for ownership (FIT, 20,000 points out of cache: morse_chain@38 146 -> 113 ns a point,
    gibbs_mixing@75 279 -> 263, fpu_chain@38 132 -> 120; no change in cache)."""
    intp = types.intp
    width = len(columns)
    with cgutils.for_range(builder, groups) as g:
        j0 = builder.mul(g.index, context.get_constant(intp, v))
        transposed = []
        for k0 in runs(width, v):
            cols = []
            for c in range(v):
                source = columns[k0 + c]
                if isinstance(source, float):
                    cols.append(ir.Constant(ir.VectorType(_F64, v), [source] * v))
                else:
                    ptr = scratch.at(builder, source, j0)
                    cols.append(builder.load(_vector_pointer(builder, ptr, v), align=8 * v))
            transposed.append((k0, transpose(builder, cols)))
        for r in range(v):
            row = builder.add(s, builder.add(j0, context.get_constant(intp, r)))
            for k0, rows in transposed:
                ptr = cgutils.get_item_pointer(context, builder, oty, outs,
                                               [row, context.get_constant(intp, k0)])
                builder.store(rows[r], _vector_pointer(builder, ptr, v), align=8)


def emit_prefetch(context, builder, array, first, rows) -> None:
    """Hints that bring `rows` C-contiguous rows of `array` (Numba's array struct) from row
    `first` on (clamped to the array) into L2, one a cache line: a lane kernel asks for its next
    block's inputs while it computes this one, where the hardware's prefetcher, which follows
    demand loads, stops at the first loop that has none."""
    intp = types.intp
    n, width = cgutils.unpack_tuple(builder, array.shape)[:2]
    zero = context.get_constant(intp, 0)
    start = builder.select(builder.icmp_signed("<", first, n), first, n)
    left = builder.sub(n, start)
    count = builder.select(builder.icmp_signed("<", left, rows), left, rows)
    base = builder.bitcast(builder.gep(array.data, [builder.mul(start, width)]),
                           ir.IntType(8).as_pointer())
    size = builder.mul(builder.mul(count, width), context.get_constant(intp, 8))
    i32 = ir.IntType(32)
    hint = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
        ir.VoidType(), [ir.IntType(8).as_pointer(), i32, i32, i32]), "llvm.prefetch.p0i8")
    with cgutils.for_range_slice(builder, zero, size, context.get_constant(intp, 64)) as (
            offset, _):  # (read, locality 2: L2, data)
        builder.call(hint, [builder.gep(base, [offset]), ir.Constant(i32, 0),
                            ir.Constant(i32, 2), ir.Constant(i32, 1)])
