"""From expressions to programs: differentiate, then schedule each kernel (value, value and
gradient, ...: the products of lower.products) as a straight-line Program the backends render."""

from __future__ import annotations

from collections.abc import Sequence

from ..frontends.userfunctions import require_numerics
from ..ir.node import Node
from ..ir.printer import to_text
from ..ir.regroup import join_sums
from ..ir.traversal import capped_tree_sizes, topological_order
from .products import Derivatives, Product, products_for
from .schedule import Program, schedule_all

_DESCRIBE_MAX_CHARS = 400
_DESCRIBE_MAX_NODES = 2 * _DESCRIBE_MAX_CHARS


def describe(outputs: Sequence[Node], labels: Sequence[str]) -> list[str]:
    """``label = formula`` lines for a generated module's docstring (short formulas only)."""
    lines = []
    for label, node in zip(labels, outputs):
        try:
            # A tree of more nodes than the limit has characters never prints within it:
            # skip the tidy pass (most of a 1,000-operation build) that would only find so.
            big = capped_tree_sizes(topological_order([node]), _DESCRIBE_MAX_NODES)[node]
            text = None if big >= _DESCRIBE_MAX_NODES else to_text(
                node, max_length=_DESCRIBE_MAX_CHARS)
        except ValueError:
            text = None
        lines.append(f"{label} = {text}" if text else f"{label} = (an expression too large "
                     "to show; see the steps below)")
    return lines


def build_programs(outputs: Sequence[Node], inputs: Sequence[Node], wrt: Sequence[Node],
                   scalar: bool = True, with_hessian: bool = False, with_derivatives: bool = True,
                   *, products: Sequence[Product] | None = None, comments: bool = True
                   ) -> list[Program]:
    """One Program per product (default: `products_for` the flags): differentiate w.r.t.
    `wrt`, then schedule each kernel over `inputs`. Without `comments` the steps carry no
    display text (printing it is most of the work for an interpreted first call)."""
    if products is None:
        products = products_for(scalar, with_hessian, with_derivatives)
    outputs = join_sums(outputs)  # (sums of wide sums: like terms collect across them)
    derivatives = Derivatives(outputs, inputs, wrt)
    if len(outputs) != 1 and any(p.scalar_only for p in products):
        raise ValueError(f"{[p.name for p in products if p.scalar_only]} need a scalar "
                         "expression")
    programs = schedule_all([(p.name, derivatives.value_slots + p.slots(derivatives))
                             for p in products], inputs, derivatives.idents, comments)
    require_numerics([op for p in programs for op, _, _ in p.census])  # undefined f: say so
    return programs
