"""Guards: derivatives through branches never meet the untaken side's inf or nan.

The chain rule through ``where(c, a, b)`` multiplies `a`'s adjoint by a 0/1 mask, and every
partial below `a` by that product: at a point where `c` is false, `a`'s subgraph may hold
``sqrt(-1)`` or ``1/0``, and ``0 * inf`` is nan (JAX's "nan gradient through where"). So the
differentiator never multiplies by a mask: an adjoint (or tangent) is a pair ``(guard, inner)``,
meaning ``where(guard, inner, 0)``, and a mask partial (a comparison; the branch masks of
`where`, `min`, `max`, `relu`) narrows the guard instead. Products with ordinary partials are
made on `inner` and stay under the guard; the select is made only where it is safe to drop the
guard: on reaching a `clean` node (one whose subgraph has only ops whose values and partials
are finite for finite arguments: the op table's ``finite`` trait), where a merged adjoint is
summed, and at the end. A guarded derivative is built of `where` nodes, so derivatives of it
(Hessians, n-th derivatives) are guarded in turn.

Guards are tested by truth (nonzero, nan included, as `where` tests its condition): the
conjunction of guards g and m is ``where(g, m, 0)``, their disjunction ``where(g, 1, m)``, and
the negation the `where` partial already builds is ``where(c, 0, 1)``, unwrapped where a select
is made (``where(c, 0, v)``, not ``where(where(c, 0, 1), v, 0)``). Smooth expressions have no
masks, so their derivatives are built exactly as without guards.
"""

from __future__ import annotations

import math

from ..ir.node import Node, combine
from ..ir.ops import COMPARISONS, OPS

Guard = Node | None  # None: always live


def mask_guard(partial) -> Guard:
    """The guard a 0/1 mask partial stands for (true exactly where it is 1), else None."""
    if partial.__class__ is not Node:
        return None
    if partial.op in COMPARISONS:
        return partial
    if partial.op == "where":
        c, a, b = partial.args
        if a.op == "const" and b.op == "const":
            if a.value == 1.0 and b.value == 0.0:
                return c
            if a.value == 0.0 and b.value == 1.0:
                return partial  # a negation: `select` unwraps it
    return None


def _negated(guard: Node) -> Node | None:
    """c when `guard` is ``where(c, 0, 1)``."""
    if guard.op == "where":
        c, a, b = guard.args
        if a.op == "const" and b.op == "const" and a.value == 0.0 and b.value == 1.0:
            return c
    return None


def _branch(guard: Node, yes, no) -> Node:
    """``where(guard, yes, no)``, a negated guard unwrapped."""
    c = _negated(guard)
    return guard.call("where", yes, no) if c is None else c.call("where", no, yes)


def select(guard: Guard, value: Node) -> Node:
    """``where(guard, value, 0)``: exactly 0 where the guard is false."""
    return value if guard is None else _branch(guard, value, 0.0)


def complementary(g: Node, h: Node) -> bool:
    return _negated(g) is h or _negated(h) is g


def conjoin(guard: Guard, mask: Node) -> Guard | float:
    """Live under both; 0.0 when that is never (a guard and its negation)."""
    if guard is None or guard is mask:
        return mask
    if complementary(guard, mask):
        return 0.0
    both = _branch(guard, mask, 0.0)
    if both.op == "const":
        return None if both.value != 0.0 or math.isnan(both.value) else 0.0
    return both


def disjoin(g: Node, h: Node) -> Guard:
    """Live under either; None when that is always (a guard and its negation)."""
    if g is h:
        return g
    if complementary(g, h):
        return None
    return _branch(g, 1.0, h)


def total(terms: list[Node]) -> Node:
    return terms[0] if len(terms) == 1 else combine("add", terms)


def merge(terms: list[tuple[Guard, Node]], keep_guard: bool) -> tuple[Guard, Node]:
    """One (guard, inner) pair from a node's contributions. With `keep_guard` false (the node
    is clean, or nothing is multiplied below it) the result is unguarded: selects made now."""
    groups: dict[Guard, list[Node]] = {}
    for guard, inner in terms:
        groups.setdefault(guard, []).append(inner)
    sums = [(guard, total(inners)) for guard, inners in groups.items()]
    if len(sums) == 1:
        guard, inner = sums[0]
        return (guard, inner) if keep_guard or guard is None else (None, select(guard, inner))
    if len(sums) == 2 and None not in groups and complementary(sums[0][0], sums[1][0]):
        (g, a), (_, b) = sums  # both sides of one condition: one select
        return None, _branch(g, a, b)
    value = total([select(guard, inner) for guard, inner in sums])
    if not keep_guard or None in groups:
        return None, value
    live = sums[0][0]
    for guard, _ in sums[1:]:
        live = disjoin(live, guard)
        if live is None:
            break
    return live, value


def clean_nodes(order: list[Node]) -> set[Node]:
    """The nodes of `order` (topological) whose whole subgraph is symbols, finite constants and
    ops with the ``finite`` trait (and integer powers ``u**k``, k >= 1): every value and partial
    in it is finite at a finite point, so an adjoint selected to an exact 0 stays 0 through it."""
    clean: set[Node] = set()
    for node in order:
        if node.op == "symbol" or (node.op == "const" and math.isfinite(node.value)):
            clean.add(node)
        elif node.args and all(a in clean for a in node.args) and (
                OPS[node.op].finite or _polynomial_power(node)):
            clean.add(node)
    return clean


def _polynomial_power(node: Node) -> bool:
    """``u**k`` for a constant integer k >= 1: a polynomial, finite with its partial."""
    if not OPS[node.op].integer_powers or len(node.args) != 2 or not node.args[1].is_const:
        return False
    k = node.args[1].value
    return k >= 1.0 and float(k).is_integer()

