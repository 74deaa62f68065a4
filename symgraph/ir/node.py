"""The expression DAG: immutable, interned nodes made through one constructor, `apply`.

Equal subexpressions are the same object (`a is b` means "same expression"), so common
subexpression elimination is free. Commutative arguments are kept in a canonical order derived
from a stable structural digest (never `hash()` or `id()`), so structure, printing and generated
code are identical in every process.

Construction (`rules`) applies only light rules that keep IEEE meaning (up to the sign of a zero:
``x + 0`` is ``x`` even for ``x = -0.0``): constants fold (with NumPy
semantics, so ``1/0`` folds to ``inf``), ``x+0``, ``x*1``, ``x**1``, ``x**0``, ``--x``, n-ary
``add``/``mul`` flatten (nested ones of up to `FLATTEN_LIMIT` operands), and like terms
collect (``x + x`` is ``2*x``). ``x*0`` and ``x-x`` are
kept: they are ``nan`` when ``x`` is infinite.
"""

from __future__ import annotations

import numpy as np

from .intern import Node, _as_node, const, interned_count, symbol, symbols
from .intern import _intern as _intern  # the tidy and separable passes make raw nodes with it
from .rules import FLATTEN_LIMIT, _made, apply, combine

_ARRAY = np.ndarray


class _Operators:
    """`Node`'s operators and its `times`/`call`, installed on it below: they call the
    constructor, which is `rules`', so they cannot live in `intern` beside the class."""

    def times(self, other) -> Node:
        """``self * other`` keeping both operands whole (see `combine`)."""
        return combine("mul", [self, other])

    def call(self, op: str, *others) -> Node:
        """``x.call("sin")`` is ``sin(x)``; ``c.call("where", a, b)`` is ``where(c, a, b)``."""
        return apply(op, self, *others)

    # -- operators: each is one call of the constructor ----------------------------------------
    # With an array on the right, NotImplemented lets NumPy's reflected operator build the
    # elementwise result (x - w is an array for an array w).
    # The arithmetic ops are built in (sealed): their operators go straight to `_made`, the
    # step of `apply` after its checks.
    def __add__(self, other):
        if other.__class__ is not Node:
            if isinstance(other, _ARRAY):
                return NotImplemented
            other = _as_node(other)
        return _made("add", (self, other))

    def __radd__(self, other): return _made("add", (_as_node(other), self))

    def __sub__(self, other):
        if other.__class__ is not Node:
            if isinstance(other, _ARRAY):
                return NotImplemented
            other = _as_node(other)
        return _made("add", (self, _made("neg", (other,))))

    def __rsub__(self, other): return _made("add", (_as_node(other), _made("neg", (self,))))

    def __mul__(self, other):
        if other.__class__ is not Node:
            if isinstance(other, _ARRAY):
                return NotImplemented
            other = _as_node(other)
        return _made("mul", (self, other))

    def __rmul__(self, other): return _made("mul", (_as_node(other), self))

    def __truediv__(self, other):
        if other.__class__ is not Node:
            if isinstance(other, _ARRAY):
                return NotImplemented
            other = _as_node(other)
        return _made("div", (self, other))

    def __rtruediv__(self, other): return _made("div", (_as_node(other), self))

    def __pow__(self, other):
        if other.__class__ is not Node:
            if isinstance(other, _ARRAY):
                return NotImplemented
            other = _as_node(other)
        return _made("pow", (self, other))

    def __rpow__(self, other): return _made("pow", (_as_node(other), self))
    def __neg__(self): return _made("neg", (self,))
    def __pos__(self): return self
    def __abs__(self): return apply("abs", self)

    def __lt__(self, other):
        return apply("lt", self, other) if not isinstance(other, _ARRAY) else NotImplemented

    def __le__(self, other):
        return apply("le", self, other) if not isinstance(other, _ARRAY) else NotImplemented

    def __gt__(self, other):
        return apply("gt", self, other) if not isinstance(other, _ARRAY) else NotImplemented

    def __ge__(self, other):
        return apply("ge", self, other) if not isinstance(other, _ARRAY) else NotImplemented


for _name, _method in vars(_Operators).items():
    if callable(_method):
        setattr(Node, _name, _method)
del _name, _method

__all__ = ["FLATTEN_LIMIT", "Node", "apply", "combine", "const", "interned_count", "symbol",
           "symbols"]
