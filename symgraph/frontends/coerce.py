"""What the public functions accept: nodes, numbers, text (parsed safely) or SymPy objects for
expressions; nodes or names for symbols. One place, so every entry point agrees."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..ir.evaluate import free_symbols
from ..ir.node import Node, _as_node, symbol
from .parser import parse


def as_expression(expr: Any, variables: Any = None) -> Node:
    """A Node from a Node, a number, text (parsed safely) or a SymPy expression; in text, the
    names of `variables` (nodes or names) are symbols even if they name a constant (``E``)."""
    if isinstance(expr, Node):
        return expr
    if isinstance(expr, str):
        return parse(expr, variables=_names(variables))
    if type(expr).__module__.startswith("sympy"):
        from .sympy_bridge import from_sympy  # SymPy is imported only when it is used

        return from_sympy(expr)
    return _as_node(expr)


def _names(variables: Any) -> list[str]:
    if variables is None:
        return []
    if isinstance(variables, str):
        return variables.replace(",", " ").split()
    if isinstance(variables, Node):
        variables = [variables]
    try:
        return [v.value if isinstance(v, Node) and v.is_symbol else str(v) for v in variables]
    except TypeError:
        return []


def check_not_constants(symbols: Sequence[Node], outputs: Sequence[Node], role: str) -> None:
    """A symbol named like a constant (``e``, ``E``, ``pi``) that the expressions do not use
    was surely read as the constant (text parsed without `variables`, then folded): say so,
    instead of returning zero derivatives."""
    from ..ir.ops import CONSTANTS

    named = [s for s in symbols if s.value in CONSTANTS]
    if not named:
        return
    used = {n.value for n in free_symbols(list(outputs))}
    for s in named:
        if s.value not in used:
            raise ValueError(
                f"{role} name {s.value!r}, but the expression has no variable {s.value!r}: "
                f"text reads {s.value} as the constant {CONSTANTS[s.value]!r}. Parse it with "
                f"parse(text, variables=[{s.value!r}, ...]), or pass the text itself with these "
                "names, to make it a variable")


def as_symbols(args: Any, outputs: Sequence[Node], role: str = "arguments") -> list[Node]:
    """Symbols given as nodes or names (``"x y"`` works); None means the free symbols by name."""
    if args is None:
        return free_symbols(outputs)
    if isinstance(args, str):
        args = args.replace(",", " ").split()
    if isinstance(args, Node) or type(args).__module__.startswith("sympy") and not hasattr(
            args, "__iter__"):
        args = [args]
    result = [a if isinstance(a, Node) else symbol(str(a)) for a in args]
    for a in result:
        if not a.is_symbol:
            raise TypeError(f"{role} must be symbols, got {a}")
    if len({id(a) for a in result}) != len(result):
        raise ValueError(f"a symbol is listed twice among the {role}")
    return result
