"""NumPy's ufuncs as builders of expression nodes: ``np.sin`` is the op ``sin``.

The table is derived from the op table: a ufunc whose name is an op (or an op's NumPy alias,
``arcsin`` -> ``asin``, ``maximum`` -> ``max``), or that is an op's own numeric meaning
(``np.divide`` evaluates ``div``), builds that op. NumPy spellings with no op of their own are
compositions of ops (``subtract``, ``square``, ``logaddexp``, ``isnan``...). SciPy's ufuncs are
found by name the same way (``scipy.special.erf`` is ``erf``, ``expit`` is ``sigmoid``).
A ufunc with no op raises a TypeError that names it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .node import Node, _as_node, apply
from .ops import ALIASES, OPS

Builder = Callable[..., Node]

_LN2 = math.log(2.0)


def _op(name: str) -> Builder:
    def build(*args) -> Node:
        return apply(name, *args)

    build.__name__ = name
    return build


def _logaddexp(a, b) -> Node:
    # max + log1p(exp(-|a - b|)): no overflow, as NumPy computes it.
    return apply("add", apply("max", a, b),
                 apply("log1p", apply("exp", apply("neg", apply("abs", _sub(a, b))))))


def _logaddexp2(a, b) -> Node:
    gap = apply("neg", apply("abs", _sub(a, b)))
    return apply("add", apply("max", a, b),
                 apply("div", apply("log1p", apply("pow", 2.0, gap)), _LN2))


def _sub(a, b) -> Node:
    return apply("add", a, apply("neg", b))


def _floor_divide(a, b) -> Node:
    return apply("floor", apply("div", a, b))


def _remainder(a, b) -> Node:
    # NumPy's (and Python's) modulo: the result has the sign of the divisor.
    return _sub(a, apply("mul", apply("floor", apply("div", a, b)), b))


def _trunc(x) -> Node:
    return apply("where", apply("lt", x, 0.0), apply("ceil", x), apply("floor", x))


def _clip(x, low, high) -> Node:
    result = x
    if low is not None:
        result = apply("max", result, low)
    if high is not None:
        result = apply("min", result, high)
    return result


def _ne_zero(x) -> Node:
    return apply("ne", x, 0.0)


# NumPy spellings that are compositions of ops.
_COMPOSED: dict[str, Builder] = {
    "subtract": _sub,
    "square": lambda x: apply("pow", x, 2.0),
    "reciprocal": lambda x: apply("div", 1.0, x),
    "positive": _as_node,
    "conjugate": _as_node,
    "fabs": _op("abs"),
    "exp2": lambda x: apply("pow", 2.0, x),
    "float_power": _op("pow"),
    "logaddexp": _logaddexp,
    "logaddexp2": _logaddexp2,
    "deg2rad": lambda x: apply("mul", x, math.pi / 180.0),
    "radians": lambda x: apply("mul", x, math.pi / 180.0),
    "rad2deg": lambda x: apply("mul", x, 180.0 / math.pi),
    "degrees": lambda x: apply("mul", x, 180.0 / math.pi),
    "floor_divide": _floor_divide,
    "remainder": _remainder,
    "trunc": _trunc,
    "clip": _clip,
    "isnan": lambda x: apply("ne", x, x),
    "isinf": lambda x: apply("eq", apply("abs", x), math.inf),
    "isfinite": lambda x: apply("lt", apply("abs", x), math.inf),
    "logical_not": lambda x: apply("eq", x, 0.0),
    "logical_and": lambda a, b: apply("where", a, _ne_zero(b), 0.0),
    "logical_or": lambda a, b: apply("where", a, 1.0, _ne_zero(b)),
    "logical_xor": lambda a, b: apply("ne", _ne_zero(a), _ne_zero(b)),
    "heaviside": lambda x, h0: apply("where", apply("gt", x, 0.0), 1.0,
                                     apply("where", apply("lt", x, 0.0), 0.0, h0)),
    "expit": _op("sigmoid"),
}
# NumPy names of ops that are neither the op's name nor a parser alias.
_RENAMED = {"multiply": "mul", "divide": "div", "true_divide": "div", "power": "pow",
            "negative": "neg", "less": "lt", "less_equal": "le", "greater": "gt",
            "greater_equal": "ge", "equal": "eq", "not_equal": "ne"}


def _table() -> dict[str, Builder]:
    table: dict[str, Builder] = {}
    for name, spec in OPS.items():
        table[name] = _op(name)
        if isinstance(spec.evaluate, np.ufunc):  # np.divide is div's meaning, and so on
            table[spec.evaluate.__name__] = table[name]
    for alias, name in {**ALIASES, **_RENAMED}.items():
        table.setdefault(alias, table[name])
    for alias, build in _COMPOSED.items():
        table.setdefault(alias, build)
    return table


# ufunc name -> builder of one element; keyed by name so NumPy's aliases (np.abs is
# np.absolute) and SciPy's ufuncs of the same functions agree.
BUILDERS: dict[str, Builder] = _table()
# Names Node gets a method under: NumPy's loops over object arrays call ``x.sin()`` for np.sin
# (and ``x.arctan2(y)``...), so elementwise functions of plain object arrays of nodes work too.
METHOD_NAMES = sorted(
    name for name in BUILDERS
    if isinstance(getattr(np, name, None), np.ufunc) and getattr(np, name).__name__ == name
    and any("O" in t for t in getattr(np, name).types))


def builder(ufunc: np.ufunc) -> Builder:
    """The node builder of `ufunc`, or a TypeError naming it."""
    name = getattr(ufunc, "__name__", repr(ufunc))
    build = BUILDERS.get(name)
    if build is None:
        module = "np" if isinstance(ufunc, np.ufunc) and getattr(np, name, None) is ufunc \
            else type(ufunc).__module__.split(".")[0]
        raise TypeError(
            f"{module}.{name} has no symgraph op; symbolic values take the ufuncs of the op "
            "table (np.sin, np.exp, np.log1p, np.maximum, np.where, ...: see "
            "symgraph.ir.numpy_ufuncs.BUILDERS), or compute it on numbers outside the traced "
            "function")
    return build
