"""Emit Numba kernels: a per-point kernel and a batch kernel (`emit_numba_batch`).

Each program's steps are written once, as a plain Python function ``NAME_steps(_x, _out)`` (one
statement per step; it runs as it is). Numba's own front end (bytecode analysis, type
inference, lowering) costs about a millisecond per statement, seconds for a kernel of a few
thousand steps, so the jitted ``NAME_row`` does not compile the steps through it: its body is one
call of an intrinsic made from ``NAME_steps`` by ``_straight_line``, whose code generator emits
every step with the implementation Numba itself uses for that operation on float64 (typed once
per operation, not once per statement). The machine code is the same, bit for bit, and
compiling it takes a tenth of the time: what remains is mostly LLVM.

``error_model="numpy"`` makes division by zero give inf/nan instead of raising, and no
fastmath flag is set, so results keep IEEE semantics. ``cache=True`` keeps the machine code
beside the generated file, so another process reuses it without compiling. A row kernel reads
every input before it writes any output, so ``_x`` and ``_out`` may be the same array (the API
passes floats in the array the results come back in).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...lower.schedule import Program
from ..common import INDENT, module_header, output_lines, step_lines
from .batch import JIT, SHARING, batch_kernel_lines, vecmath_calls

# The lowering every generated module carries (so it stays standalone): the steps' syntax is
# what the op table's Numba templates produce, and nothing else is accepted.
LOWERING = '''
# -- How the kernels compile ------------------------------------------------------------------
# NAME_steps below is each kernel in plain Python. NAME_row runs the same steps compiled by
# Numba, but its body is one call of an intrinsic made by _straight_line: each step becomes the
# code of Numba's own implementation of that operation on float64 (the numbers of an @njit of
# NAME_steps, bit for bit), without Numba's per-statement front end, which is 10x slower.

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow, ast.BitAnd: operator.and_,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}
_CALLABLE = {"abs": abs, "max": max, "min": min, "math": math, "np": np}


def _straight_line(steps):
    """An intrinsic (x, out) -> None that runs the assignments of the function `steps` (read
    only when Numba compiles, not when its cache has the machine code)."""

    def typer(typingctx, x, out):
        if isinstance(x, types.Array) and isinstance(out, types.Array) and x.ndim == 1 == out.ndim:
            body = ast.parse(inspect.getsource(steps)).body[0].body
            return types.void(x, out), lambda *lowering: _lower(body, *lowering)
        return None

    typer.__name__ = steps.__name__
    return numba.extending.intrinsic(typer)


def _lower(body, context, builder, signature, args):
    arrays = [(ty, context.make_array(ty)(context, builder, a))
              for ty, a in zip(signature.args, args)]

    def pointer(node):  # _x[i] or _out[k]
        ty, ary = arrays[node.value.id == "_out"]
        return ty.dtype, numba.core.cgutils.get_item_pointer(
            context, builder, ty, ary, [context.get_constant(types.intp, node.slice.value)])

    _compile_steps(context, builder, pointer, {})(_stores_early(body))
    return context.get_dummy_value()


def _stores_early(body):
    """The steps with each output stored as soon as it is computed, not all at the end: LLVM
    then keeps fewer values alive (~8% faster at 1,500 steps). Inputs are still all read before
    any output is written, so `x` may be `out`."""
    stores, rest = {}, []
    for statement in body:
        if isinstance(statement.targets[0], ast.Subscript) and isinstance(statement.value,
                                                                           ast.Name):
            stores.setdefault(statement.value.id, []).append(statement)
        else:
            rest.append(statement)
    ordered = []
    for statement in rest:
        ordered.append(statement)
        target = statement.targets[0]
        if isinstance(target, ast.Name) and not isinstance(statement.value, ast.Subscript):
            ordered += stores.pop(target.id, [])  # not an input's load: a step's value
    return ordered + [store for group in stores.values() for store in group]


def _compile_steps(context, builder, pointer, impls):
    """A function that emits the assignments it is given (`pointer` addresses subscripts and
    the lane flag). Steps are float64; the vecmath functions they call (straight-line code on
    float64, int64 and bool) are inlined, so Numba's front end never compiles them."""
    typing, f64, top = context.typing_context, types.float64, {}

    def call(function, operands):  # typed once per kernel, operation and operand types
        key = (function, tuple(ty for _, ty in operands))
        if key not in impls:
            fnty = typing.resolve_value_type(function)
            sig = typing.resolve_function_type(fnty, key[1], {})
            packed = sig.pysig is not None and len(sig.args) < len(operands)  # max(*x)
            impls[key] = sig, context.get_function(fnty, sig), packed
        sig, impl, packed = impls[key]
        if packed:  # *args arrive as one tuple, as Numba's own lowering passes them
            values = [context.make_tuple(builder, sig.args[0], [v for v, _ in operands])]
        else:
            values = [context.cast(builder, v, ty, want)
                      for (v, ty), want in zip(operands, sig.args)]
        return impl(builder, values), sig.return_type

    def constant(value):
        ty = {float: f64, int: types.int64, bool: types.boolean}[type(value)]
        return context.get_constant(ty, value), ty

    def number(node, env):
        value, ty = evaluate(node, env)
        return value if ty == f64 else context.cast(builder, value, ty, f64)

    def condition(node, env):
        if isinstance(node, ast.BoolOp):
            parts = [condition(v, env) for v in node.values]
            join = builder.or_ if isinstance(node.op, ast.Or) else builder.and_
            result = parts[0]
            for part in parts[1:]:
                result = join(result, part)
            return result
        value, ty = evaluate(node, env)
        return context.cast(builder, value, ty, types.boolean)

    def inline(function, operands):
        """The value (a list for a tuple) of a vecmath function: assignments, then a return."""
        if function not in impls:
            impls[function] = ast.parse(inspect.getsource(function.py_func)).body[0]
        tree = impls[function]
        env = dict(zip([a.arg for a in tree.args.args], operands))
        for statement in tree.body:
            if isinstance(statement, ast.Return):
                if isinstance(statement.value, ast.Tuple):
                    return [evaluate(e, env) for e in statement.value.elts]
                return evaluate(statement.value, env)
            if not isinstance(statement, ast.Expr):  # docstring
                assign(statement, env, typed=True)
        raise NotImplementedError(f"{function} returns nothing")

    def evaluate(node, env):
        if isinstance(node, ast.Name):  # a value, else a module constant (vecmath's)
            return env[node.id] if node.id in env else constant(globals()[node.id])
        if isinstance(node, ast.Constant):
            return constant(node.value)
        if isinstance(node, ast.Attribute) and node.value.id == "math":  # math.inf, math.nan
            return context.get_constant(f64, getattr(math, node.attr)), f64
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            if isinstance(node.operand, ast.Constant):  # Python folds -2.0 into a constant
                return constant(-node.operand.value)
            return call(operator.neg, [evaluate(node.operand, env)])
        if isinstance(node, ast.BinOp):
            return call(_BINARY[type(node.op)], [evaluate(node.left, env),
                                                 evaluate(node.right, env)])
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            operands = [evaluate(node.left, env), evaluate(node.comparators[0], env)]
            return call(_COMPARE[type(node.ops[0])], operands)
        if isinstance(node, ast.IfExp):  # both sides are pure: select between them
            test = condition(node.test, env)
            return builder.select(test, number(node.body, env), number(node.orelse, env)), f64
        if isinstance(node, ast.Call) and not node.keywords:
            f, operands = node.func, [evaluate(a, env) for a in node.args]
            if isinstance(f, ast.Attribute):
                return call(getattr(_CALLABLE[f.value.id], f.attr), operands)
            if f.id in _CALLABLE:
                return call(_CALLABLE[f.id], operands)
            if f.id == "_where":  # vecmath's intrinsics: a select, bit casts
                (c, tc), (a, ta), (b, tb) = operands
                ty = typing.unify_types(ta, tb)
                return builder.select(context.cast(builder, c, tc, types.boolean),
                                      context.cast(builder, a, ta, ty),
                                      context.cast(builder, b, tb, ty)), ty
            if f.id in ("_bits", "_float"):
                ty = types.int64 if f.id == "_bits" else f64
                return builder.bitcast(operands[0][0], context.get_value_type(ty)), ty
            return inline(globals()[f.id], operands)
        if isinstance(node, ast.Subscript):
            dtype, ptr = pointer(node)
            return context.unpack_value(builder, dtype, ptr), dtype
        raise NotImplementedError(f"no straight-line lowering for {ast.unparse(node)!r}")

    def assign(statement, env, typed=False):
        if isinstance(statement, ast.AugAssign):  # _F[_j] |= condition: a point's flag
            dtype, ptr = pointer(statement.target)
            value = builder.or_(context.unpack_value(builder, dtype, ptr),
                                condition(statement.value, env))
            context.pack_value(builder, dtype, value, ptr)
            return
        target = statement.targets[0]
        if isinstance(target, ast.Tuple):  # a, b = f(x)
            for name, value in zip(target.elts, evaluate(statement.value, env)):
                env[name.id] = value
        elif isinstance(target, ast.Name):
            env[target.id] = (evaluate(statement.value, env) if typed
                              else (number(statement.value, env), f64))
        else:  # _out[k] = value, _F[_j] = False
            dtype, ptr = pointer(target)
            value = (condition(statement.value, env) if dtype == types.boolean else
                     context.cast(builder, number(statement.value, env), f64, dtype))
            context.pack_value(builder, dtype, value, ptr)

    def run(statements):
        for statement in statements:
            assign(statement, top)

    return run
'''

# Only in modules with a lane batch kernel (emit_numba_batch).
LANE_LOWERING = '''

# NAME_lanes below runs the steps on a block of points, one loop over the block per segment.
# NAME_batch compiles it through _lane_loops: the loops become loops in LLVM IR (which LLVM
# vectorises as it would Numba's), each step is lowered as _straight_line lowers it, and _T is
# a scratch array on the stack. Numba's front end types one call instead of every line (~2 ms
# a line), and the lane code is no function of its own that LLVM compiles, then again inside
# the batch loop: half the compile time, the same machine loops.

def _lane_loops(lanes, slots, block, chunk, widths):
    """An intrinsic (X, OUT, c) -> None that runs the function `lanes` on each block of `block`
    points of chunk c (points c*chunk .. c*chunk + chunk - 1), its loops over _j as loops in
    LLVM IR (which LLVM vectorises), its _T as `slots` floats and its _F as `block` flags on
    the stack. A loop of `if _F[_j]: NAME_steps(_X[_s + _j], _OUT[_s + _j])` lowers NAME_steps
    (the row kernel's steps) for the points flagged. `widths` maps "_X" and "_OUT" to their
    rows' lengths when these are small enough to address with constants (C-contiguous arrays of
    that many columns, which the caller checks): LLVM then vectorises the loops that read and
    write them (interleaved loads and stores), which it cannot do with the arrays' own
    strides."""

    def typer(typingctx, x, out, c):
        if (isinstance(x, types.Array) and isinstance(out, types.Array) and x.ndim == 2 == out.ndim
                and isinstance(c, types.Integer)):
            loops = ast.parse(inspect.getsource(lanes)).body[0].body
            layouts = {"_X": x.layout, "_OUT": out.layout}
            constant = {name: width for name, width in widths.items() if layouts[name] == "C"}
            return types.void(x, out, c), lambda *lowering: _lower_lanes(
                loops, slots, block, chunk, constant, *lowering)
        return None

    typer.__name__ = lanes.__name__
    return numba.extending.intrinsic(typer)


def _lower_lanes(loops, slots, block, chunk, widths, context, builder, signature, args):
    cgutils, intp, impls = numba.core.cgutils, types.intp, {}
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
        for loop in loops:
            if not isinstance(loop, ast.For):
                continue
            with cgutils.for_range(builder, m) as j:
                j = j.index

                def pointer(node, column=None):  # _T[offset + _j], _X[_s + _j, k], _F[_j]...
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

                if isinstance(loop.body[0], ast.If):  # libm for the flagged points: rarely
                    test = pointer(loop.body[0].test)[1]
                    call = loop.body[0].body[0].value
                    steps = ast.parse(inspect.getsource(globals()[call.func.id])).body[0].body
                    with cgutils.if_unlikely(builder, context.unpack_value(
                            builder, types.boolean, test)):
                        row = {"_x": call.args[0], "_out": call.args[1]}  # _X[_s + _j]...
                        _compile_steps(context, builder, lambda node: pointer(
                            row[node.value.id], node.slice), impls)(steps)
                    continue
                _compile_steps(context, builder, pointer, impls)(loop.body)
    return context.get_dummy_value()
'''


def _steps_function(p: Program) -> list[str]:
    lines = [f"def {p.name}_steps(_x, _out):"]
    lines += [f"{INDENT}{name} = _x[{i}]" for i, name in enumerate(p.inputs)]
    lines += step_lines(p, "nb", INDENT)
    lines += output_lines(p, "_out[{k}]", INDENT)
    return lines


def _row_kernel(p: Program) -> list[str]:
    return [f"_{p.name}_steps = _straight_line({p.name}_steps)", "", "",
            JIT, f"def {p.name}_row(_x, _out):", f"{INDENT}_{p.name}_steps(_x, _out)"]


def emit_numba(programs: Sequence[Program], title: str, description: Sequence[str],
               input_labels: Sequence[str], version: str) -> str:
    lines = module_header(title, description, programs, input_labels, version,
                          ["import ast", "import inspect", "import math", "import operator", "",
                           "import numba", "import numpy as np",
                           "from numba import njit, types"])
    batches = [batch_kernel_lines(p) for p in programs]
    lines += LOWERING.rstrip("\n").split("\n")
    lines += SHARING.rstrip("\n").split("\n")
    if any(line.startswith(f"_{p.name}_lanes = ") for p, b in zip(programs, batches) for line in b):
        lines += LANE_LOWERING.rstrip("\n").split("\n")
    used = vecmath_calls("\n".join(line for b in batches for line in b))
    if used:  # only what the lane code calls: each function is more machine code to compile
        from . import vecmath  # imports Numba: only when a module needs it

        lines += ["", "", "# -- symgraph.vecmath (the functions the lane code calls) " + "-" * 36,
                  "", *vecmath.source_of(used).rstrip("\n").split("\n")]
    for p, batch in zip(programs, batches):
        lines += ["", "", *_steps_function(p), "", "", *_row_kernel(p), "", "", *batch]
    return "\n".join(lines) + "\n"
