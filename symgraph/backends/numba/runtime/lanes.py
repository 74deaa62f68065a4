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
import copy
import functools

from llvmlite import ir
from numba import types
from numba.core import cgutils

from . import transpose
from .lowering import compile_steps

# Rows of at least this many input columns (4 cache lines) have the next block's inputs
# prefetched (`transpose.emit_prefetch`). FIT, 20,000 points (out of cache): fpu_chain@38 (76
# columns) 120 -> 112 ns a point, gibbs_mixing@75 263 -> 248, arrhenius@93 (32) 258 -> 250,
# the same in cache; narrower rows lost in cache what they gained out of it (fpu_chain@13, 26
# columns: 14.8 -> 15.5 in cache, 15.1 -> 15.4 out of it; fpu_chain@4 4.4 -> 4.7). The hints
# go out a group of 8 rows at a time, as that group's copy starts (the same group of the next
# block), not all of a block's at once: with outputs streamed (`transpose.STREAM_BYTES`), 24
# wide workloads at 20,000 points, one process, calls alternated: FIT median 1.08x (fpu_chain@38
# 1.27x, product_chain@33 1.19x, fisher_z@75 1.00x), VALIDATE median 1.06x (minimal_surface@57
# 1.13x; worst negbin_loglik@56 0.93x, rational@43 0.98x); at 512 points (in cache) 0.94-1.07x,
# median 1.00x. Narrower rows, hinted too, lost again in cache (fpu_chain@4 0.83x).
PREFETCH_COLUMNS = 32


def lower_lanes(loops, steps, slots, block, chunk, widths, interleave, context, builder,
                signature, args, parts=(), calls=()):
    """Emit the loops `loops` (of a ``NAME_lanes``) into an intrinsic's code (X, OUT, c) that
    runs chunk c; a fix-up loop's call (``NAME_steps(_X[_s + _j], _OUT[_s + _j])``) runs the
    statements `steps`. The loops numbered in `interleave` (counting the function's for-loops
    from 0) run a whole block as its two halves at once, statement by statement (`_halves`).
    `parts` (loop numbers, ascending, from 0) cut the loops into functions of their own, each
    called once a block (`_part`): LLVM optimises and allocates registers function by function,
    in time that grows faster than a function's size, so a big kernel compiles as many small
    ones (see backends.numba.batch.PART_STEPS). The loops numbered in `calls` (a vecmath step
    each) call a function of their own too, one for all the loops of one shape (`_shared`)."""
    intp = types.intp
    (xty, _, cty), (x, out, c) = signature.args, args
    fors = [loop for loop in loops if isinstance(loop, ast.For)]
    numbered = list(enumerate(fors))
    if parts:  # one array, each slot a pointer into it (a part's arguments)
        base = _alloca_slot(context, builder, slots)
        scratch = Slots(block, {k: builder.gep(base, [context.get_constant(intp, k * block)])
                                for k in sorted(_slots_of(numbered, block))})
    else:  # one scratch array, as small kernels were fitted with
        scratch = Slots(block, {}, _alloca_slot(context, builder, slots))
    flags = cgutils.alloca_once(builder, context.get_data_type(types.boolean), size=block)
    n = cgutils.unpack_tuple(builder, context.make_array(xty)(context, builder, x).shape)[0]
    start = builder.mul(context.cast(builder, c, cty, intp), context.get_constant(intp, chunk))
    end = builder.add(start, context.get_constant(intp, chunk))
    stop = builder.select(builder.icmp_signed("<", n, end), n, end)
    cuts = {k for k in parts if 0 < k < len(fors)}
    copied = transpose.copy_in_columns(fors[0]) if fors else None
    ahead = block if (xty.layout == "C" and copied is not None
                      and max(k for k, _ in copied) + 1 >= PREFETCH_COLUMNS) else 0
    groups: list[tuple[bool, list]] = []  # (in a function of its own, its loops)
    for number, loop in numbered:
        compiled = _calls_compiled(loop, steps)
        shared = number in calls and not compiled  # a called loop: a group of its own
        own = shared or bool(parts) and not compiled
        if (not groups or number in cuts or not own or not groups[-1][0] or shared
                or groups[-1][1][-1][0] in calls):
            groups.append((own, []))
        groups[-1][1].append((number, loop))
    emit = functools.partial(_emit_loops, context, signature, steps, block, widths, interleave,
                             ahead)
    functions: dict = {}  # a called loop's shape -> its function and slot count
    called = [None if not own else _shared(context, builder, signature, group[0][1], block,
                                           emit, functions) if group[0][0] in calls else
              (*_part(context, builder, signature, group, block, emit), ())
              for own, group in groups]
    with cgutils.for_range_slice(builder, start, stop, context.get_constant(intp, block)) as (
            s, _):
        left = builder.sub(n, s)
        m = builder.select(builder.icmp_signed("<", left, context.get_constant(intp, block)),
                           left, context.get_constant(intp, block))
        for call, (_, group) in zip(called, groups):
            if call is None:
                emit(builder, x, out, scratch, flags, s, m, group)
            else:
                function, used, constants = call
                builder.call(function, [x, out, flags, s, m,
                                        *(scratch.slot(builder, k) for k in used),
                                        *(ir.Constant(ir.DoubleType(), c) for c in constants)])
    transpose.emit_store_fence(builder)
    return context.get_dummy_value()


class Slots:
    """The slots of ``_T``: one array (`base`), or in a kernel cut into parts a pointer to each
    slot (`pointers`: slot number -> a pointer to `block` floats), which a part takes as an
    argument of its own, marked noalias. LLVM's loop passes (LoopAccessAnalysis, in the
    vectoriser and in LoopLoadElimination) compare every pair of accesses to one object, so
    one scratch array made their time grow with the square of a loop's accesses (FIT
    arrhenius@100: 14.5 s of LLVM passes, two fifths of it in those two; 4.4 s with arrays of
    their own); a part's noalias arguments are objects of their own to them. The pointers
    point into one array on the kernel's stack: an alloca of each slot cost MemCpyOpt time
    growing faster than their number (FIT arrhenius@993, 18,903 steps: 12 s of 50 s of LLVM
    passes; 38.6 s with one array). Small kernels keep the one array and address it
    directly: FIT fpu_chain@38 ran at 83 ns a point with it, 146 without (load ~5)."""

    def __init__(self, block, pointers, base=None) -> None:
        self.block, self.pointers, self.base = block, pointers, base

    def slot(self, builder, k):
        """A pointer to slot k's first float."""
        if self.base is None:
            return self.pointers[k]
        return builder.gep(self.base, [ir.Constant(ir.IntType(64), k * self.block)])

    def at(self, builder, offset, j):
        """The address of ``_T[offset + j]`` (offset a Python int, j an LLVM index)."""
        if self.base is not None:  # one array of all slots
            return builder.gep(self.base, [builder.add(ir.Constant(j.type, offset), j)])
        slot, within = divmod(offset, self.block)
        index = j if not within else builder.add(j, ir.Constant(j.type, within))
        return builder.gep(self.pointers[slot], [index])


def _calls_compiled(loop, steps) -> bool:
    """Whether a loop (with the row's `steps`, for a fix-up loop) calls a compiled function
    (a special or user function): Numba's calling convention reaches the caller's own
    arguments, so such a loop stays in the kernel's function, not in a part."""
    from ..special import external  # (here: a process that only loads kernels never needs it)

    trees = [loop, *(steps if isinstance(loop.body[0], ast.If) else [])]
    return any(isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and external(node.func.id) is not None)
        or (isinstance(node.func, ast.Attribute) and node.func.attr in _COMPILED_HELPERS))
        for tree in trees for node in ast.walk(tree))


# Functions whose Numba implementation compiles a Python helper and calls it with Numba's
# calling convention (numba/cpython/mathimpl.py: `compile_internal`): a loop calling them (a
# fix-up's libm hypot, bond_angles@92) stays in the kernel's function like a special one.
_COMPILED_HELPERS = frozenset({"hypot", "gcd"})


def _alloca_slot(context, builder, block):
    slot = cgutils.alloca_once(builder, context.get_value_type(types.float64), size=block)
    slot.align = 64  # whole cache lines: a slot's vector loads never straddle two
    return slot


def _slots_of(numbered, block):
    """The slot numbers the loops `numbered` read or write (``_T[offset + _j]``)."""
    return {node.slice.left.value // block for _, loop in numbered for node in ast.walk(loop)
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id == "_T"}


def _shared(context, builder, signature, loop, block, emit, functions):
    """The function that runs the loop `loop` (a vecmath step's, its slots and float constants
    made arguments) and every loop of its shape: in `functions`, by shape, or made now (a
    `_part`). Returns it, the slots to pass and the constants to pass."""
    shape, slots, constants = _shape(loop, block)
    key = ast.dump(shape)
    if key not in functions:
        names = [f"_k{k}" for k in range(len(constants))]
        functions[key] = _part(context, builder, signature, [(-1, shape)], block, emit, names,
                               "calls")
    function, _ = functions[key]
    return function, slots, constants


def _shape(loop, block):
    """`loop` with its slots numbered in order of first use (``_T[0 + _j]``, ``_T[block + _j]``
    ...), its values named so (_v0, _v1...) and its float constants named _k0, _k1...: two
    steps of one op on other values and constants have one shape. Returns it, the loop's
    slots (in that order) and its constants."""
    constants: list[float] = []

    class Constants(ast.NodeTransformer):
        def visit_Constant(self, node):
            if type(node.value) is not float:
                return node
            constants.append(node.value)
            return ast.Name(f"_k{len(constants) - 1}", ast.Load())

    shape = Constants().visit(copy.deepcopy(loop))
    slots: dict[int, int] = {}
    targets = [node.targets[0] for node in ast.walk(shape) if isinstance(node, ast.Assign)]
    names = {t.id: f"_v{k}" for k, t in enumerate(
        t for target in targets for t in getattr(target, "elts", [target])
        if isinstance(t, ast.Name))}
    for node in ast.walk(shape):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and (
                node.value.id == "_T"):
            slot, within = divmod(node.slice.left.value, block)
            node.slice.left.value = slots.setdefault(slot, len(slots)) * block + within
        elif isinstance(node, ast.Name) and node.id in names:
            node.id = names[node.id]
    return shape, list(slots), constants


def _part(context, builder, signature, group, block, emit, constants=(), kind="lanes"):
    """A function of its own (internal, never inlined) that runs the loops `group` on a block:
    (X, OUT, _F, s, m, a pointer to each slot it uses, then a float for each name of
    `constants`), the flags and slots marked as aliasing nothing (as the caller's stack arrays,
    which they are). Returns it and the slot numbers its pointer arguments are."""
    intp = context.get_value_type(types.intp)
    xty, oty = (context.get_value_type(t) for t in signature.args[:2])
    double, flag = context.get_value_type(types.float64), context.get_data_type(types.boolean)
    used = sorted(_slots_of(group, block))
    fnty = ir.FunctionType(ir.VoidType(), [xty, oty, flag.as_pointer(), intp, intp]
                           + [double.as_pointer()] * len(used) + [double] * len(constants))
    module, base = builder.module, f"{builder.function.name}.{kind}{max(group[0][0], 0)}"
    name, k = base, 0
    while name in module.globals:
        k += 1
        name = f"{base}.{k}"
    function = ir.Function(module, fnty, name=name)
    function.linkage = "internal"
    function.attributes.add("noinline")
    function.attributes.add("nounwind")
    function.args[2].add_attribute("noalias")
    pointers = function.args[5:5 + len(used)]
    for argument in pointers:
        argument.add_attribute("noalias")
        argument.attributes.align = 64
    inner = ir.IRBuilder(function.append_basic_block("entry"))
    x, out, flags, s, m = function.args[:5]
    env = {name: (value, types.float64)
           for name, value in zip(constants, function.args[5 + len(used):])}
    emit(inner, x, out, Slots(block, dict(zip(used, pointers))), flags, s, m, group, env=env)
    inner.ret_void()
    return function, used


def _emit_loops(context, signature, steps, block, widths, interleave, ahead, builder, x, out,
                scratch, flags, s, m, numbered, env=None):
    """The loops `numbered` ((number, loop) pairs) on the block of m points from s (`env`:
    values the loops' names stand for, a called loop's constants; `ahead`: rows from a group's
    to the one whose inputs a transposed copy-in prefetches, 0 for none)."""
    intp, impls = types.intp, {}
    (xty, oty, _) = signature.args
    arrays = {"_X": (xty, context.make_array(xty)(context, builder, x)),
              "_OUT": (oty, context.make_array(oty)(context, builder, out))}
    for number, loop in numbered:
        if number in interleave:
            _halves(context, builder, loop, arrays, scratch, flags, widths, s, m, block, impls)
            continue
        first = _transposed(context, builder, loop, arrays, scratch, flags, widths, s, m,
                            ahead)
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
            compile_steps(context, builder, pointer, impls, env)(loop.body)


def _pointers(context, builder, arrays, scratch, flags, widths, s, j):
    """Where a subscript of lane code points for point s + j: _T[offset + _j], _X[_s + _j, k],
    _OUT[_s + _j, k], _F[_j] (a row's `column` given apart for a fix-up's _x[k], _out[k])."""
    intp = types.intp

    def pointer(node, column=None):
        if node.value.id == "_T":
            return types.float64, scratch.at(builder, node.slice.left.value, j)
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


def _transposed(context, builder, loop, arrays, scratch, flags, widths, s, m, ahead):
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
        if name == "_OUT":
            emit(context, builder, ty, ary, scratch, s, groups, columns, v)
        else:
            emit(context, builder, ty, ary, scratch, s, groups, list(columns), v, ahead)
        return builder.mul(groups, context.get_constant(intp, v))
    return zero
