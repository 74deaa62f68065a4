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
import platform

from llvmlite import ir
from numba import types
from numba.core import cgutils

_F64 = ir.DoubleType()
# Outputs of at least this many bytes (a batch's rows in all; about L2) are written with
# non-temporal stores when 64-byte aligned (runtime.outputs makes arrays that big so). FIT,
# one process, calls alternated, 1,024 to 20,000 points: fpu_chain@38 67.5 -> 62.2 ns a point
# (1,024), 61.8 -> 56.1 (2,048), 92.9 -> 60.9 (8,192), 132 -> 90 (20,000); fpu_chain@12
# 20.2 -> 19.4 (1,024), 27.5 -> 18.5 (8,192); morse_chain@20 50.8 -> 48.1 (1,024), 68.0 ->
# 59.1 (8,192). In L2 (512 points) no change either way; the bound keeps a small batch's
# results in cache for whoever reads them next.
STREAM_BYTES = 1 << 20


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


def emit_copy_in(context, builder, xty, xs, scratch, s, groups, columns, v, ahead=0) -> None:
    """Columns [(k, offset)] of rows s .. s + groups*v - 1 of X (array `xs` of type `xty`)
    into the slots, `groups` groups of `v` points; with `ahead`, each group first prefetches
    the v rows `ahead` rows after its own."""
    intp = types.intp
    wanted = dict(columns)
    width = max(wanted) + 1
    with cgutils.for_range(builder, groups) as g:
        j0 = builder.mul(g.index, context.get_constant(intp, v))
        if ahead:
            later = builder.add(builder.add(s, j0), context.get_constant(intp, ahead))
            emit_prefetch(context, builder, xs, later, context.get_constant(intp, v))
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


def line_shuffles(width: int) -> list[tuple[int, int, list[int]]]:
    """How a group of 8 rows of `width` (>= 8) columns, 8 * width doubles in row order, is cut
    into `width` lines of 8 doubles (64 bytes) made from the transposed run vectors (row r's
    run q: columns runs(width, 8)[q] .. + 7): for each line, the two run vectors it takes its
    elements from (numbered r * len(runs) + q) and the shuffle's mask (i < 8 from the first,
    8 + i from the second). Any 8 consecutive doubles lie in at most two of them: within a row
    a run and the next, across rows the last run of one row and the first of the next."""
    starts = runs(width, 8)
    lines = []
    for line in range(width):
        where = [divmod(8 * line + t, width) for t in range(8)]
        holders = [[r * len(starts) + q for q, k0 in enumerate(starts) if k0 <= c < k0 + 8]
                   for r, c in where]
        first, second = _two_covering(holders)
        mask = []
        for (_, c), held in zip(where, holders):
            a = first if first in held else second
            mask.append(c - starts[a % len(starts)] + (0 if a == first else 8))
        lines.append((first, second, mask))
    return lines


def _two_covering(holders: list[list[int]]) -> tuple[int, int]:
    """Two vectors (the same one twice when one does) holding an element of every entry."""
    for a in holders[0]:
        rest = [held for held in holders if a not in held]
        if not rest:
            return a, a
        for b in rest[0]:
            if all(b in held for held in rest):
                return a, b
    raise AssertionError("a line spans more than two run vectors")


def emit_copy_out(context, builder, oty, outs, scratch, s, groups, columns, v) -> None:
    """Columns {k: slot offset or constant} into rows s .. s + groups*v - 1 of OUT (array
    `outs` of type `oty`), `groups` groups of `v` points. A group's rows are stored one after
    the other, each from its first column to its last: one ascending stretch of memory, which
    the store queue drains line by line where a run's v stores to v rows kept v lines waiting
    for ownership (FIT, 20,000 points out of cache: morse_chain@38 146 -> 113 ns a point,
    gibbs_mixing@75 279 -> 263, fpu_chain@38 132 -> 120; no change in cache). When OUT is
    64-byte aligned and at least STREAM_BYTES, a group of 8 rows (8 * width doubles, `width`
    whole cache lines) is stored instead as `width` lines, each made of two run vectors by one
    shuffle (`line_shuffles`), with non-temporal stores: whole lines go to memory without first
    being read for ownership, as memcpy does past a threshold of its own."""
    intp = types.intp
    width = len(columns)
    stream = None
    if v == 8:  # (rows of exactly `width` columns: a group's rows adjacent)
        n, columns_in_row = cgutils.unpack_tuple(builder, outs.shape)[:2]
        first = cgutils.get_item_pointer(context, builder, oty, outs,
                                         [s, context.get_constant(intp, 0)])
        i64 = ir.IntType(64)
        stream = builder.and_(builder.and_(
            builder.icmp_signed(">=", builder.mul(n, context.get_constant(intp, 8 * width)),
                                context.get_constant(intp, STREAM_BYTES)),
            builder.icmp_signed("==", columns_in_row, context.get_constant(intp, width))),
            builder.icmp_unsigned("==", builder.and_(builder.ptrtoint(first, i64),
                                                     ir.Constant(i64, 63)), ir.Constant(i64, 0)))
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
        if stream is None:
            _store_rows(context, builder, oty, outs, s, j0, transposed, v)
        else:
            _store_lines(context, builder, oty, outs, s, j0, transposed, width, stream)


def _store_rows(context, builder, oty, outs, s, j0, transposed, v) -> None:
    """Each row's run vectors, a row after the other."""
    intp = types.intp
    for r in range(v):
        row = builder.add(s, builder.add(j0, context.get_constant(intp, r)))
        for k0, rows in transposed:
            ptr = cgutils.get_item_pointer(context, builder, oty, outs,
                                           [row, context.get_constant(intp, k0)])
            builder.store(rows[r], _vector_pointer(builder, ptr, v), align=8)


def _store_lines(context, builder, oty, outs, s, j0, transposed, width, stream) -> None:
    """If `stream`, the group's 8 rows as `width` whole lines (`line_shuffles`), stored
    non-temporally; else row by row (`_store_rows`: no shuffles, the faster in cache)."""
    intp = types.intp
    with builder.if_else(stream) as (streamed, cached):
        with streamed:
            vectors = [rows[r] for r in range(8) for _, rows in transposed]
            base = cgutils.get_item_pointer(context, builder, oty, outs,
                                            [builder.add(s, j0), context.get_constant(intp, 0)])
            hint = builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)])
            for i, (a, b, mask) in enumerate(line_shuffles(width)):
                line = vectors[a] if mask == list(range(8)) else builder.shuffle_vector(
                    vectors[a], vectors[b], _mask(mask))
                ptr = builder.gep(base, [context.get_constant(intp, 8 * i)])
                store = builder.store(line, _vector_pointer(builder, ptr, 8), align=64)
                store.set_metadata("nontemporal", hint)
        with cached:
            _store_rows(context, builder, oty, outs, s, j0, transposed, 8)


def emit_store_fence(builder: ir.IRBuilder) -> None:
    """Non-temporal stores (`emit_copy_out`) are weakly ordered, and x86 orders them only by
    SFENCE or MFENCE (a locked instruction, LLVM's seq_cst fence there, need not): a chunk's
    outputs are all in memory before its thread tells another the chunk is done."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        sfence = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
            ir.VoidType(), []), "llvm.x86.sse.sfence")
        builder.call(sfence, [])
    else:
        builder.fence("seq_cst")


def emit_prefetch(context, builder, array, first, rows) -> None:
    """Hints that bring `rows` C-contiguous rows of `array` (Numba's array struct) from row
    `first` on (clamped to the array) into L2, one a cache line: a lane kernel asks for its next
    block's inputs while it computes this one, where the hardware's prefetcher, which follows
    demand loads, stops at the first loop that has none. (A whole block's hints at once held
    the core up until most had gone out: `lanes.PREFETCH_COLUMNS`.)"""
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
