"""Wide sums nested in sums, joined where nothing else uses them, so like terms collect.

`apply` flattens a nested sum into its parent only up to `rules.FLATTEN_LIMIT` operands:
flattening a wider one copies its operands, which recomputes a shared partial sum at every
use. So a log-likelihood written as a sum of per-observation sums keeps every observation's
terms apart: dirichlet_multinomial@688 (172 sums of 10 terms, most of them the same few
lgamma nodes) scheduled 4,438 operations where SymPy, whose sums always flatten, had 198.

`join_sums` rebuilds the DAG under `outputs` once, in topological order (iterative, linear):
a wide sum whose one use is as a term of another sum hands its terms to that sum instead of
becoming a node; the outer sum is made by `apply`, which collects like terms
(``lgamma(a) + ... + lgamma(a)`` is ``172*lgamma(a)``). Sums used twice or more, or by
anything but a sum, stay as they are, so nothing is recomputed and a chain like
``y = y + h*f(y)`` (each y also an argument of f) is left alone. Nodes above a joined sum are
made again from their new arguments; everything else is the same node.
"""

from __future__ import annotations

from collections.abc import Sequence

from .node import Node
from .rules import FLATTEN_LIMIT, apply
from .traversal import topological_order


def has_wide_terms(node: Node) -> bool:
    """Whether `node` is a sum with a sum of more than FLATTEN_LIMIT operands among its terms
    (what `join_sums` may join; a look at one node's operands)."""
    return node.op == "add" and any(a.op == "add" and len(a.args) > FLATTEN_LIMIT
                                    for a in node.args)


def join_sums(outputs: Sequence[Node]) -> list[Node]:
    """`outputs` with every wide sum used only as a term of one other sum joined into it."""
    order = topological_order(outputs)
    if not any(has_wide_terms(node) for node in order):
        return list(outputs)  # (the common case: one pass over the ops)
    uses: dict[Node, int] = dict.fromkeys(outputs, 1)  # an output is used by the caller
    for node in order:
        for a in node.args:
            uses[a] = uses.get(a, 0) + 1
    joined = {a for node in order if node.op == "add" for a in node.args
              if a.op == "add" and uses[a] == 1 and len(a.args) > FLATTEN_LIMIT}
    made: dict[Node, Node] = {}  # node -> its rebuilt self (absent: unchanged)
    terms_of: dict[Node, list[Node]] = {}  # a joined sum -> its terms, for its one user
    for node in order:
        if not node.args:
            continue
        if node.op == "add" and (node in joined or any(a in joined for a in node.args)):
            terms: list[Node] = []
            for a in node.args:
                if a in joined:  # (the longest list first would save copies; a chain's
                    taken = terms_of.pop(a)  # one joined term is its first: extend it)
                    if not terms:
                        terms = taken
                    else:
                        terms.extend(taken)
                else:
                    terms.append(made.get(a, a))
            if node in joined:
                terms_of[node] = terms
            else:
                made[node] = apply("add", *terms)
            continue
        args = [made.get(a, a) for a in node.args]
        if any(new is not old for new, old in zip(args, node.args)):
            made[node] = apply(node.op, *args)
    return [made.get(o, o) for o in outputs]
