"""Walking expression DAGs: topological order, tree sizes, free symbols, the reference
evaluator, and `bulk`, which pauses Python's cycle collector while a stage builds or walks a
whole graph. Every traversal is iterative (no recursion limit) and deterministic."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from .node import Node  # noqa: F811


_F = TypeVar("_F", bound=Callable)


def bulk(function: _F) -> _F:
    """Run `function` with Python's cycle collector paused.

    Expression graphs hold no reference cycles, so reference counting frees them; but building
    10^5 nodes triggers the collector again and again, and each pass rescans every node alive
    (about a third of a large gradient's time). Stages that build or walk whole graphs use this.
    On the way out, what the stage allocated moves to the oldest generation unscanned (a
    freeze and unfreeze: the collector's own list splice), so the first collection after it
    does not walk the new graph (0.2 s at 10^5 nodes); a cycle among them is still collected,
    by the next full collection. Not done when the process has frozen objects of its own.
    """

    @functools.wraps(function)
    def paused(*args, **kwargs):
        if not gc.isenabled():  # nested, or the caller paused it: leave the state alone
            return function(*args, **kwargs)
        gc.disable()
        _WALKED[:] = [None, True]
        try:
            return function(*args, **kwargs)
        finally:
            _WALKED[:] = [None, False]
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()

    return paused  # type: ignore[return-value]


# -- traversal and reference evaluation -------------------------------------------------------


def topological_order(outputs: Iterable[Node]) -> list[Node]:
    """Every node reachable from `outputs`, each after its arguments. Iterative, deterministic."""
    return topological_prefixes(outputs)[0]


# While a `bulk` stage runs (and only then: no graph is kept alive after it), the last root
# walked alone and its order, as a tuple. The differentiator walks f, then the schedule f and
# its derivatives, whose order starts with f's: that walk is not done twice (0.03 s at 50,000
# nodes). [(root, order) or None, whether a stage runs]
_WALKED: list = [None, False]


def topological_prefixes(outputs: Iterable[Node]) -> tuple[list[Node], list[int]]:
    """`topological_order(outputs)`, and for each output the length of the order once it is
    walked: ``order[:ends[k - 1]]`` is the topological order of the first k outputs."""
    outputs = list(outputs)
    order: list[Node] = []
    ends: list[int] = []
    done: set[Node] = set()  # membership only (nodes hash by identity); order comes from args
    walked = _WALKED[0]
    if walked is not None and outputs and outputs[0] is walked[0]:
        order, done = list(walked[1]), set(walked[1])
        ends.append(len(order))
        outputs = outputs[1:]
    finish, append = done.add, order.append
    for root in outputs:
        if root not in done:
            stack = [(root, iter(root.args))]
            push, top = stack.append, stack.pop
            while stack:
                node, pending = stack[-1]
                for child in pending:
                    if child not in done:
                        if child.args:
                            push((child, iter(child.args)))
                            break
                        finish(child)  # a leaf: finished at once
                        append(child)
                else:
                    top()
                    finish(node)
                    append(node)
        ends.append(len(order))
    if len(ends) == 1 and order and _WALKED[1]:
        _WALKED[0] = (order[-1], tuple(order))  # (a root is the last of its order)
    return order, ends


def capped_tree_sizes(order: list[Node], cap: int) -> dict[Node, int]:
    """Size of each node printed as a tree, counted up to `cap` (then `cap`): linear work even
    where sharing makes real tree sizes exponential. `order` is a topological order."""
    sizes: dict[Node, int] = {}
    for node in order:
        total = 1
        for arg in node.args:
            total += sizes[arg]
        sizes[node] = total if total < cap else cap
    return sizes
