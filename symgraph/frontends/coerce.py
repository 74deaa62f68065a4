"""What the public functions accept: nodes, numbers, text (parsed safely) or SymPy objects for
expressions; nodes or names for symbols. One place, so every entry point agrees."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..ir.evaluate import free_symbols
from ..ir.node import Node, _as_node, symbol
from .parser import parse


def as_expression(expr: Any) -> Node:
    """A Node from a Node, a number, text (parsed safely) or a SymPy expression."""
    if isinstance(expr, Node):
        return expr
    if isinstance(expr, str):
        return parse(expr)
    if type(expr).__module__.startswith("sympy"):
        from .sympy_bridge import from_sympy  # SymPy is imported only when it is used

        return from_sympy(expr)
    return _as_node(expr)


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
