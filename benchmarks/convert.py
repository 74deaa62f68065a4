"""Hand a symgraph DAG to array libraries: straight-line Python over a namespace (jax.numpy,
torch, casadi, ...), one line per distinct node, the way a user would write the function.

Iterative (symgraph's topological order), so deep and wide DAGs need no recursion, and shared
nodes stay shared: the generated function computes each distinct subexpression once, exactly
like ``sympy.lambdify(cse=True)`` output.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from symgraph.ir.node import Node
from symgraph.ir.traversal import topological_order

CHUNK = 16  # wide sums and products are split: one huge expression strains Python's compiler

# Each op's call template in a NumPy-named namespace (numpy, jax.numpy): ``{0}``, ``{1}``, ...
# are the operands; `templates` prefixes the module and takes each library's overrides.
_NUMPY_NAMES = {
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh", "acosh": "arccosh",
    "atanh": "arctanh", "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p",
    "log2": "log2", "log10": "log10", "sqrt": "sqrt", "cbrt": "cbrt", "abs": "abs", "sign": "sign",
    "floor": "floor", "ceil": "ceil", "min": "minimum", "max": "maximum", "atan2": "arctan2",
    "hypot": "hypot", "where": "where",
}
OPERATORS = {"lt": "({0} < {1})", "le": "({0} <= {1})", "gt": "({0} > {1})",
             "ge": "({0} >= {1})", "eq": "({0} == {1})", "ne": "({0} != {1})"}


class Unsupported(ValueError):
    """The DAG uses an op the target namespace has no mapping for."""


def _literal(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return f"float({str(value)!r})"
    return f"({value!r})" if value < 0 else repr(value)  # parenthesized: -2.0 ** x is -(2**x)


def _exponent(node: Node) -> str:
    # Integer exponents as int literals: JAX then uses integer_pow and PyTorch pow(int), as a
    # user writing x**2 would get.
    if node.op == "const" and node.value.is_integer() and abs(node.value) < 64:
        return str(int(node.value))
    return "{}"


def source(outputs: Sequence[Node], args: Sequence[Node], functions: Mapping[str, str],
           name: str = "f", vector_input: bool = True) -> str:
    """Python source of ``def name(x)`` (or ``def name(v0, v1, ...)``) returning the outputs.

    `functions` maps each op but add, mul, neg, div and pow to a call template such as
    ``"jnp.sin({0})"``.
    """
    names: dict[int, str] = {}
    lines = []
    if vector_input:
        lines.append(f"def {name}(x):")
        lines += [f"    v{i} = x[{i}]" for i in range(len(args))]
    else:
        lines.append(f"def {name}({', '.join(f'v{i}' for i in range(len(args)))}):")
    for i, a in enumerate(args):
        names[id(a)] = f"v{i}"
    count = 0
    for node in topological_order(outputs):
        if id(node) in names:
            continue
        if node.op == "const":
            names[id(node)] = _literal(node.value)
            continue
        if node.op == "symbol":
            raise ValueError(f"symbol {node.value!r} is not among the arguments")
        operands = [names[id(a)] for a in node.args]
        target = f"t{count}"
        count += 1
        if node.op in ("add", "mul"):
            sign = " + " if node.op == "add" else " * "
            while len(operands) > CHUNK:  # fold the head into a temporary
                lines.append(f"    {target}_{len(operands)} = {sign.join(operands[:CHUNK])}")
                operands = [f"{target}_{len(operands)}"] + operands[CHUNK:]
            code = sign.join(operands)
        elif node.op == "neg":
            code = f"-{operands[0]}"
        elif node.op == "div":
            code = f"{operands[0]} / {operands[1]}"
        elif node.op == "pow":
            code = f"{operands[0]} ** {_exponent(node.args[1]).format(operands[1])}"
        elif node.op in functions:
            code = functions[node.op].format(*operands)
        else:
            raise Unsupported(f"no mapping for op {node.op!r}")
        lines.append(f"    {target} = {code}")
        names[id(node)] = target
    results = [names[id(o)] for o in outputs]
    returned = results[0] if len(results) == 1 else "(" + ", ".join(results) + ",)"
    lines.append(f"    return {returned}")
    return "\n".join(lines) + "\n"


def function(outputs: Sequence[Node], args: Sequence[Node], functions: Mapping[str, str],
             namespace: Mapping[str, object], vector_input: bool = True) -> Callable:
    """The compiled function of `source` with `namespace` as its globals."""
    code = source(outputs, args, functions, vector_input=vector_input)
    scope = dict(namespace)
    exec(compile(code, "<benchmarks.convert>", "exec"), scope)  # our own generated text
    return scope["f"]


def templates(module: str, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{op: "module.name({0}, ...)"}`` under NumPy's names, the comparison operators, and
    per-library `overrides` (a template per op; ``None`` drops the op)."""
    table = {op: f"{module}.{name}({', '.join(f'{{{i}}}' for i in range(_arity(op)))})"
             for op, name in _NUMPY_NAMES.items()}
    table.update(OPERATORS)
    for op, template in (overrides or {}).items():
        if template is None:
            table.pop(op, None)
        else:
            table[op] = template
    return table


def _arity(op: str) -> int:
    from symgraph.ir.ops import OPS

    return OPS[op].arity
