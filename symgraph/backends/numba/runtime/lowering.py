"""How a row kernel compiles: the steps of ``NAME_steps(_x, _out)`` lowered one by one.

Numba's own front end (bytecode analysis, type inference, lowering) costs about a millisecond
per statement, seconds for a kernel of a few thousand steps. A generated ``NAME_row`` instead
calls an intrinsic made from ``NAME_steps`` (`symgraph.backends.numba.runtime.straight_line`),
whose code generator, `lower`, emits every step with the implementation Numba itself uses for
that operation on float64 (typed once per operation, not once per statement). The machine code
is that of an ``@njit`` of ``NAME_steps``, bit for bit, and compiling it takes a tenth of the
time: what remains is mostly LLVM.

Only the syntax the op table's Numba templates produce is accepted (and that of
symgraph.backends.numba.vecmath's functions, which lane code calls and `compile_steps` inlines
from vecmath's own file). Part of the runtime adapter: it uses Numba's internals (contexts,
cgutils, llvmlite's builder), so the adapter checks it before use (see the package docstring).
"""

from __future__ import annotations

import ast
import inspect
import math
import operator

import numpy as np
from numba import types
from numba.core import cgutils

from ...imports import source_of
from .. import simd
from ..simd import OPERAND_NAMES
from .fastcall import add_fastcall

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow, ast.BitAnd: operator.and_,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}
_CALLABLE = {"abs": abs, "max": max, "min": min, "math": math, "np": np}


def _calls(node) -> bool:
    """Whether an expression calls a function (math.pow: worth a branch, not a select)."""
    return any(isinstance(n, ast.Call) for n in ast.walk(node))


def steps_body(function):
    """The statements of a plain Python function, parsed from its module's text (read only
    when Numba compiles, not when its cache has the machine code)."""
    return ast.parse(source_of(function)).body[0].body


def lower(body, context, builder, signature, args):
    """Emit the assignments `body` (of a ``NAME_steps(_x, _out)``) into an intrinsic's code."""
    arrays = [(ty, context.make_array(ty)(context, builder, a))
              for ty, a in zip(signature.args, args)]

    def pointer(node):  # _x[i] or _out[k]
        ty, ary = arrays[node.value.id == "_out"]
        return ty.dtype, cgutils.get_item_pointer(
            context, builder, ty, ary, [context.get_constant(types.intp, node.slice.value)])

    compile_steps(context, builder, pointer, {})(stores_early(body))
    return context.get_dummy_value()


def lower_point(body, context, builder, signature, args, packs=()):
    """Emit `body` (of a ``NAME_steps(_x, _out)``) as a point kernel's code: ``_x`` is a tuple
    of floats or a 1-D array, ``_out[0]`` is returned and ``_out[k]`` stored in ``g[k - 1]``
    (g: an array, or None for a program of one output); `packs` are computed SIMD lanes at a
    time (`compile_steps`)."""
    (xty, gty), (x, g) = signature.args, args
    f64, intp = types.float64, types.intp
    value = cgutils.alloca_once(builder, context.get_value_type(f64))  # _out[0], a register
    if isinstance(xty, types.Array):
        xs = context.make_array(xty)(context, builder, x)

        def load(i):
            return xty.dtype, cgutils.get_item_pointer(context, builder, xty, xs,
                                                       [context.get_constant(intp, i)])
    else:  # a tuple of floats, on the stack (LLVM keeps it in registers)
        xs = cgutils.alloca_once(builder, x.type)
        builder.store(x, xs)

        def load(i):
            return f64, builder.gep(xs, [context.get_constant(types.int32, 0),
                                         context.get_constant(types.int32, i)])
    gs = context.make_array(gty)(context, builder, g) if isinstance(gty, types.Array) else None

    def pointer(node):  # _x[i] or _out[k]
        i = node.slice.value
        if node.value.id != "_out":
            return load(i)
        if i == 0:
            return f64, value
        return gty.dtype, cgutils.get_item_pointer(context, builder, gty, gs,
                                                   [context.get_constant(intp, i - 1)])

    compile_steps(context, builder, pointer, {}, packs=packs)(stores_early(body))
    return builder.load(value)


def lower_floats(body, count, context, builder, signature, args, packs=()):
    """Emit `body` (of a ``NAME_steps(_x, _out)``) as a floats kernel's code: ``_x`` is a tuple
    of floats, and ``(_out[0], (_out[1], ..., _out[count]))`` is returned: every output a
    register, no array; `packs` as `lower_point`'s."""
    (x,), f64 = args, types.float64
    xs = cgutils.alloca_once(builder, x.type)  # the tuple on the stack (LLVM keeps registers)
    builder.store(x, xs)
    outs = [cgutils.alloca_once_value(builder, context.get_constant(f64, 0.0))
            for _ in range(count + 1)]

    def pointer(node):  # _x[i] or _out[k]
        i = node.slice.value
        if node.value.id == "_out":
            return f64, outs[i]
        return f64, builder.gep(xs, [context.get_constant(types.int32, 0),
                                     context.get_constant(types.int32, i)])

    compile_steps(context, builder, pointer, {}, packs=packs)(stores_early(body))
    values = [builder.load(o) for o in outs]
    result = signature.return_type
    gradient = context.make_tuple(builder, result.types[1], values[1:])
    add_fastcall(context, builder, signature.args[0].count, result)  # its own CPython entry
    return context.make_tuple(builder, result, [values[0], gradient])


def stores_early(body):
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


def compile_steps(context, builder, pointer, impls, env=None, packs=()):
    """A function that emits the assignments it is given (`pointer` addresses subscripts and
    the lane flag; `env`: (value, type) of names given, a called lane loop's constants).
    Steps are float64; the vecmath functions they call (straight-line code on float64, int64
    and bool) are inlined, so Numba's front end never compiles them. Each of `packs`
    ((vecmath function, libm condition on x, member targets...): backends.numba.packs) is
    emitted at its first step's statement, as one loop over its operands (`pack`)."""
    from .. import vecmath  # the functions lane code calls, inlined from their own file
    from ..special import external  # compiled functions the op table's templates call

    typing, f64, top = context.typing_context, types.float64, dict(env or {})

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

    def _global(name, env):  # in the inlined function's module; in lane code, vecmath's
        return env[""][name] if "" in env else getattr(vecmath, name)

    def inline(function, operands):
        """The value (a list for a tuple) of a vecmath function: assignments, then a return."""
        if function not in impls:
            impls[function] = ast.parse(inspect.getsource(function.py_func)).body[0]
        tree = impls[function]
        env = dict(zip([a.arg for a in tree.args.args], operands))
        env[""] = function.py_func.__globals__  # its module's names (not an identifier: no clash)
        for statement in tree.body:
            if isinstance(statement, ast.Return):
                if isinstance(statement.value, ast.Tuple):
                    return [evaluate(e, env) for e in statement.value.elts]
                return evaluate(statement.value, env)
            if not isinstance(statement, ast.Expr):  # docstring
                assign(statement, env, typed=True)
        raise NotImplementedError(f"{function} returns nothing")

    def evaluate(node, env):
        if isinstance(node, ast.Name):  # a value, else a constant of the function's module
            return env[node.id] if node.id in env else constant(_global(node.id, env))
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
        if isinstance(node, ast.BoolOp):  # of comparisons (vcbrt's): a bool, no branch
            return condition(node, env), types.boolean
        if isinstance(node, ast.IfExp):  # both sides are pure: select between them
            test = condition(node.test, env)
            if _calls(node.body) or _calls(node.orelse):  # a libm call: only the taken side
                return branch(test, node, env), f64  # (pow_prev's rare math.pow)
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
            if f.id == "_mul_error":  # a * b - p in one fused multiply-add
                (a, _), (b, _), (q, _) = operands
                return builder.fma(a, b, builder.fneg(q)), f64
            if f.id == "_fma":  # a * b + c, one rounding
                (a, _), (b, _), (c, _) = operands
                return builder.fma(a, b, c), f64
            if f.id in ("_bits", "_float"):
                ty = types.int64 if f.id == "_bits" else f64
                return builder.bitcast(operands[0][0], context.get_value_type(ty)), ty
            compiled = external(f.id)  # a special or user function: called, not inlined
            if compiled is not None:
                return call(compiled, operands)
            return inline(_global(f.id, env), operands)
        if (isinstance(node, ast.Subscript) and "" in env and isinstance(node.value, ast.Name)
                and isinstance(env[""].get(node.value.id), tuple)):  # an inlined function's
            return constant(env[""][node.value.id][node.slice.value])  # table (its module's)
        if isinstance(node, ast.Subscript):
            dtype, ptr = pointer(node)
            return context.unpack_value(builder, dtype, ptr), dtype
        raise NotImplementedError(f"no straight-line lowering for {ast.unparse(node)!r}")

    def branch(test, node, env):
        with builder.if_else(test) as (then, otherwise):
            with then:
                yes, yes_block = number(node.body, env), builder.block
            with otherwise:
                no, no_block = number(node.orelse, env), builder.block
        phi = builder.phi(yes.type)
        phi.add_incoming(yes, yes_block)
        phi.add_incoming(no, no_block)
        return phi

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

    def pack(function, limit, members, steps):
        """Compute the packed steps: their operands into an array, one loop of the vecmath
        function over it (LLVM vectorises it), a flag if any operand is beyond vecmath's
        range (`limit`), and only then, a branch recomputing those with libm. A pack too
        small to pay on this CPU (`simd.pack_lanes`) is the row's libm calls, as listed."""
        intp = types.intp
        n = simd.pack_lanes(function, len(members))  # whole vectors: no scalar remainder
        if not n:
            for member in members:
                for target in member:
                    assign(steps[target], top)
            return
        calls = [[steps[t].value for t in member] for member in members]
        operands = [[number(a, top) for a in (cs[0].args if isinstance(cs[0], ast.Call)
                                             else (cs[0].left, cs[0].right))]  # x ** y
                    for cs in calls]
        arrays = [cgutils.alloca_once(builder, context.get_value_type(f64), size=n)
                  for _ in operands[0]]
        results = [cgutils.alloca_once(builder, context.get_value_type(f64), size=n)
                   for _ in members[0]]
        for array in arrays + results:
            array.align = 64
        for k in range(n):  # the padding lanes compute f(1.0, ...): in every function's range
            for j, array in enumerate(arrays):
                value = operands[k][j] if k < len(operands) else context.get_constant(f64, 1.0)
                builder.store(value, builder.gep(array, [context.get_constant(intp, k)]))
        test = ast.parse(limit, mode="eval").body if limit else None
        flag = cgutils.alloca_once_value(builder, cgutils.false_bit)
        with cgutils.for_range(builder, context.get_constant(intp, n)) as loop:
            xs = [(builder.load(builder.gep(a, [loop.index])), f64) for a in arrays]
            values = inline(getattr(vecmath, function), xs)
            for result, (value, _) in zip(results, values if isinstance(values, list)
                                          else [values]):
                builder.store(value, builder.gep(result, [loop.index]))
            if test is not None:
                builder.store(builder.or_(builder.load(flag), condition(
                    test, dict(zip(OPERAND_NAMES, xs)))), flag)
        if test is not None:
            with builder.if_then(builder.load(flag), likely=False):
                for k, (xs, member) in enumerate(zip(operands, calls)):
                    with builder.if_then(condition(test, dict(zip(
                            OPERAND_NAMES, [(x, f64) for x in xs])))):
                        for result, call in zip(results, member):  # libm, as the row's step
                            builder.store(number(call, top), builder.gep(
                                result, [context.get_constant(intp, k)]))
        for k, member in enumerate(members):
            for result, target in zip(results, member):
                top[target] = builder.load(builder.gep(
                    result, [context.get_constant(intp, k)])), f64

    def run(statements):
        if not packs:
            for statement in statements:
                assign(statement, top)
            return
        statements = list(statements)
        steps = {s.targets[0].id: s for s in statements if isinstance(s, ast.Assign)
                 and isinstance(s.targets[0], ast.Name)}
        packs_ = [(f, limit, *((m,) if isinstance(m, str) else m for m in members))
                  for f, limit, *members in packs]  # a name: one target
        packed = {t: p for p in packs_ for member in p[2:] for t in member}
        for statement in statements:
            target = statement.targets[0] if isinstance(statement, ast.Assign) else None
            if isinstance(target, ast.Name) and target.id in packed:
                if target.id not in top:  # the pack's first step: all of it
                    function, limit, *members = packed[target.id]
                    pack(function, limit, members, steps)
                continue
            assign(statement, top)

    return run
