"""Hypothesis strategies shared by the tests: random expression DAGs and sample points.

    expressions(variables=("x", "y", "z"), max_depth=4, ops=None) -> SearchStrategy[Node]
    points(variables=("x", "y", "z"), low=-2.0, high=2.0) -> SearchStrategy[dict[str, float]]

    @given(expressions(ops=SMOOTH_OPS), points())
    def test_something(expr, at): ...evaluate(expr, at)...

How an expression is drawn: a pool starts with the variables and a few constants; each step
applies a random op (from `ops`, default every op in OPS) to pool members of depth below
`max_depth` and adds the result to the pool. Later steps can reuse earlier results, so the
expressions are DAGs with shared subexpressions, as real ones are. The last result is returned.
Everything goes through `graph.apply`, so construction rules (folding, flattening) apply.

How it stays evaluable: an argument slot whose op has a restricted domain (anything but the
default ``(-3, 3)``: log's ``(0.1, 4)``, the divisor's ``(0.5, 3)``, pow's base ...) receives
``squash(a) = mid + 0.9 * width * a / (1 + a*a)``, which maps every finite ``a`` into the middle
90% of the domain. It is smooth, cannot overflow, and uses only add/mul/div, which every backend
has. Constants already inside the domain are passed unchanged (so ``x**2`` stays readable). So a
value is finite at finite points unless an unrestricted op overflows (``exp(exp(...))``), which
is rare with points in ``[-2, 2]``; `test_ops.py` checks that most draws are finite.

`where` draws its condition as a comparison of two pool members, so both branches get used.
Points are plain floats: Hypothesis likes 0 and ties (``x == y``), which sit on the kinks of
abs/relu/min/max/floor..., so derivative tests against finite differences should draw from
`SMOOTH_OPS`, the ops that are differentiable everywhere on their (squashed) domain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hypothesis import strategies as st

from symgraph.ir.node import Node, apply, const, symbol
from symgraph.ir.ops import DEFAULT_DOMAIN, OPS, having

__all__ = ["COMPARISONS", "NONSMOOTH_OPS", "SMOOTH_OPS", "expressions", "points", "squash"]

# From the table's traits, so a new op joins the right strategies by its entry alone.
COMPARISONS = having("comparison")  # mask-valued: where's conditions are drawn from these
# Ops with kinks, jumps or branch conditions somewhere in their domain.
NONSMOOTH_OPS = frozenset(name for name, spec in OPS.items() if not spec.smooth)
SMOOTH_OPS = having("smooth")

_CONSTANTS = (-2.0, -1.0, -0.5, 0.25, 0.5, 1.5, 2.0, 3.0)


def squash(arg: Node, low: float, high: float) -> Node:
    """`arg` mapped smoothly into the middle 90% of ``[low, high]`` (constants inside: as is)."""
    if arg.is_const and low <= arg.value <= high:
        return arg
    mid, width = 0.5 * (low + high), high - low
    return apply("add", mid, apply("mul", 0.9 * width, apply("div", arg, 1.0 + arg * arg)))


def _in_domain(op: str, args: list[Node]) -> list[Node]:
    domain = OPS[op].domain
    result = []
    for i, arg in enumerate(args):
        low, high = domain[min(i, len(domain) - 1)]  # n-ary ops list two slots
        if i in OPS[op].integer_arguments:  # an order (besselj's n): an integer constant, one
            # that varies with the drawn argument it replaces
            span = int(math.floor(high) - math.ceil(low)) + 1
            result.append(const(float(math.ceil(low) + len(repr(arg)) % span)))
            continue
        result.append(arg if (low, high) == DEFAULT_DOMAIN else squash(arg, low, high))
    return result


def expressions(variables: Sequence[str] = ("x", "y", "z"), max_depth: int = 4,
                ops: Sequence[str] | None = None) -> st.SearchStrategy[Node]:
    """Random expression DAGs over `variables`, at most `max_depth` ops deep (squash wrappers
    not counted), using `ops` (names in OPS; default all of them)."""
    names = tuple(sorted(OPS)) if ops is None else tuple(ops)
    unknown = [n for n in names if n not in OPS]
    if unknown or not names:
        raise ValueError(f"unknown or no ops: {unknown}")

    @st.composite
    def draw(draw) -> Node:
        pool: list[tuple[Node, int]] = [(symbol(v), 0) for v in variables]
        for value in draw(st.lists(st.sampled_from(_CONSTANTS), max_size=2, unique=True)):
            pool.append((const(value), 0))
        steps = draw(st.integers(min_value=1, max_value=2 * max_depth))
        for _ in range(steps):
            usable = [entry for entry in pool if entry[1] < max_depth]
            op = draw(st.sampled_from(names))
            arity = OPS[op].arity if OPS[op].arity >= 0 else draw(st.integers(2, 3))
            picked = [draw(st.sampled_from(usable)) for _ in range(arity)]
            args = [node for node, _ in picked]
            if op == "where":  # a comparison as the condition, so both branches occur
                other = draw(st.sampled_from(usable))[0]
                args[0] = apply(draw(st.sampled_from(COMPARISONS)), args[0], other)
            node = apply(op, *_in_domain(op, args))
            pool.append((node, 1 + max(depth for _, depth in picked)))
        return pool[-1][0]

    return draw()


def points(variables: Sequence[str] = ("x", "y", "z"), low: float = -2.0,
           high: float = 2.0) -> st.SearchStrategy[dict[str, float]]:
    """Sample points: a dict from each variable name to a finite float in ``[low, high]``."""
    value = st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    return st.fixed_dictionaries({name: value for name in variables})
