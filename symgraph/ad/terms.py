"""A sum's terms and their shapes: what the patterns and kernels of large sums of small terms
read (ad.sparsity's Hessian pattern of such a sum, runtime.separable's fused kernels).

A chained or grid energy is a sum of 10^5 terms, each over a few variables, and most terms are
one formula on other variables. `split_terms` lists the terms; `term_shape` gives a term's
shape (its nodes with its variables numbered in order of first use: terms of one shape are
one formula) and its variables; `sum_hessian_pattern` is the Hessian pattern of such a sum
from one pattern per shape.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ir.node import Node

MAX_TERM_VARIABLES = 8
MAX_TERM_NODES = 400


def split_terms(f: Node) -> list[Node]:
    """The terms of `f` as a sum (nested sums flattened, left to right); [f] if not a sum."""
    terms, stack = [], [f]
    while stack:
        node = stack.pop()
        if node.op == "add":
            stack.extend(reversed(node.args))
        else:
            terms.append(node)
    return terms


def term_shape(term: Node, position: dict[Node, int], nodes: list[Node] | None = None
           ) -> tuple[tuple, list[int]] | None:
    """(shape key, the global positions of its variables in order of first use), or None when
    `term` is too big or uses a symbol outside `position`; `nodes` (a list) gets its nodes in
    topological order. The key lists, node by node: an op's name and its arguments' local
    numbers, a variable's slot (an int), a constant (the node itself: nodes are interned).
    The walk is `ir.traversal.topological_order`'s (leaves finished at once)."""
    if not term.args:  # a term that is one leaf
        if nodes is not None:
            nodes.append(term)
        if term.op != "symbol":
            return (term,), []
        where = position.get(term)
        return None if where is None else ((0,), [where])
    local: dict[Node, int] = {}
    key: list = []
    variables: list[int] = []
    stack = [(term, iter(term.args))]
    while stack:
        node, pending = stack[-1]
        for child in pending:
            if child not in local:
                if child.args:
                    stack.append((child, iter(child.args)))
                    break
                if child.op == "symbol":
                    where = position.get(child)
                    if where is None or len(variables) == MAX_TERM_VARIABLES:
                        return None
                    key.append(len(variables))
                    variables.append(where)
                else:
                    key.append(child)
                local[child] = len(local)
                if nodes is not None:
                    nodes.append(child)
        else:
            stack.pop()
            key.append(node.op)
            key.append(tuple([local[a] for a in node.args]))
            local[node] = len(local)
            if nodes is not None:
                nodes.append(node)
            if len(local) > MAX_TERM_NODES:
                return None
    return tuple(key), variables


def sum_hessian_pattern(f: Node, wrt: Sequence[Node], min_terms: int, local_pattern
                        ) -> tuple[np.ndarray, np.ndarray] | None:
    """The Hessian pattern (lower triangle, row by row) of `f` as a sum of at least
    `min_terms` small terms over `wrt` alone, from `local_pattern(term, its variables)` of one
    term per shape (the Hessian of a sum is the sum of its terms' Hessians); None when `f` is
    not such a sum."""
    if f.op != "add":
        return None
    terms = split_terms(f)
    if len(terms) < min_terms or len(set(wrt)) != len(wrt):
        return None
    position = {v: i for i, v in enumerate(wrt)}
    shapes: dict[tuple, tuple[Node, list[list[int]]]] = {}
    for term in terms:
        if term.op == "const":
            continue
        found = term_shape(term, position)
        if found is None:
            return None
        key, variables = found
        if variables:
            shape = shapes.get(key)
            if shape is None:
                shapes[key] = shape = (term, [])
            shape[1].append(variables)
    n = len(wrt)
    keys = [np.zeros(0, np.int64)]
    for first, rows in shapes.values():
        table = np.asarray(rows, dtype=np.int64)
        local_rows, local_cols = local_pattern(first, [wrt[v] for v in rows[0]])
        a, b = table[:, local_rows], table[:, local_cols]
        keys.append((np.maximum(a, b) * n + np.minimum(a, b)).ravel())
    unique = np.unique(np.concatenate(keys))
    return unique // n, unique % n
