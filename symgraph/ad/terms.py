"""A sum's terms and their shapes: what the patterns and kernels of large sums of small terms
read (ad.sparsity's Hessian pattern of such a sum, runtime.separable's fused kernels).

A chained or grid energy is a sum of 10^5 terms, each over a few variables, and most terms are
one formula on other variables. `split_terms` lists the terms; `term_shape` gives a term's
shape (its nodes with its variables numbered in order of first use: terms of one shape are
one formula) and its variables, and with its coefficients lifted, their values;
`sum_hessian_pattern` is the Hessian pattern of such a sum from one pattern per shape;
`group_terms` makes the kinds a sum's fused kernels loop over, `term_template` a kind's
formula over stand-ins.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..ir.node import Node
from ..ir.node import _intern as intern
from ..ir.ops import OPS

MAX_TERM_VARIABLES = 8
MAX_TERM_NODES = 400
FACTORED_ARGS = 8  # a sum under a factor with more terms is split (`split_terms`)


def split_terms(f: Node) -> list[Node]:
    """The terms of `f` as a sum (nested sums flattened, left to right); [f] if not a sum. A
    sum under a minus or a constant factor is split too, the factor on each of its terms
    (``-(a + b)``: ``-a``, ``-b``; ``c*(a + b)``: ``c*a``, ``c*b``), so that a negated energy
    or a weighted sum of terms is a sum of small terms; only a sum of more than
    `FACTORED_ARGS` terms (a term's own formula, a few terms under one factor, stays whole)."""
    if f.op == "add":  # a sum of terms none of which is or holds a sum: its arguments
        for arg in f.args:  # (what the walk below makes of it, without a push and pop each)
            if arg.op == "add" or (0 < len(arg.args) <= 2 and arg.args[-1].op == "add"):
                break
        else:
            return list(f.args)
    terms, stack = [], [(f, None)]  # (node, the factor on it: None, "neg" or a constant)
    while stack:
        node, factor = stack.pop()
        if node.op == "add":
            stack.extend((a, factor) for a in reversed(node.args))
            continue
        inner = node.args[-1] if len(node.args) in (1, 2) else None
        if inner is not None and inner.op == "add" and len(inner.args) > FACTORED_ARGS:
            if node.op == "neg" and factor in (None, "neg"):  # (-(-(...)): no factor)
                stack.extend((a, None if factor else "neg") for a in reversed(inner.args))
                continue
            if (node.op == "mul" and factor is None and len(node.args) == 2
                    and node.args[0].op == "const"):
                stack.extend((a, node.args[0]) for a in reversed(inner.args))
                continue
        if factor is None:
            terms.append(node)
        else:
            terms.append(intern("neg", (node,), None) if factor == "neg"
                         else intern("mul", (factor, node), None))
    return terms


# Ops whose constant arguments may be lifted (`term_shape`'s `lifted`): plain coefficients,
# offsets and thresholds, which no rewrite or derivative rule reads the value of. An exponent
# stays in the shape (x**2 is a product, its derivative a polynomial), as does a `where`'s 0/1
# (a guard's mask) and a constant that is not finite (guards read finiteness).
LIFTABLE = frozenset({"add", "mul", "div", "min", "max", "lt", "le", "gt", "ge"})


def term_shape(term: Node, position: dict[Node, int], nodes: list[Node] | None = None,
               lifted: list[Node] | None = None) -> tuple[tuple, list[int]] | None:
    """(shape key, the global positions of its variables in order of first use), or None when
    `term` is too big or uses a symbol outside `position`; `nodes` (a list) gets its nodes in
    topological order. The key lists, node by node: an op's name and its arguments' local
    numbers, a variable's slot (an int), a constant (the node itself: nodes are interned).
    With `lifted` (a list), a finite constant that only `LIFTABLE` ops read is a parameter
    instead: ``"$p"`` and its slot in the key, the constant appended to `lifted` (in order of
    first use). Terms then differ in their coefficients and data but share a shape.
    The walk is `ir.traversal.topological_order`'s (leaves finished at once)."""
    pinned: set[Node] = set()  # constants read by another op too: kept in the key
    while True:
        start = len(nodes) if nodes is not None else 0
        found = _shape(term, position, nodes, lifted, pinned)
        if found is not False:
            return found
        if nodes is not None:
            del nodes[start:]


def _shape(term, position, nodes, lifted, pinned):
    """`term_shape`'s walk; False when a lifted constant turned out to be read by an op that
    is not LIFTABLE (it is then in `pinned`: walk again)."""
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
    first = len(lifted) if lifted is not None else 0
    params: dict[Node, int] = {}  # lifted constant -> its parameter slot
    args = _structural_args(term, position) if lifted is not None else {}
    stack = [(term, iter(args.get(term, term.args)))]
    while stack:
        node, pending = stack[-1]
        for child in pending:
            if lifted is not None and child.op == "const":
                liftable = node.op in LIFTABLE and child not in pinned
                if liftable != (child in params) and child in local:  # read both ways
                    pinned.add(child)
                    del lifted[first:]
                    return False
            if child not in local:
                if child.args:
                    stack.append((child, iter(args.get(child, child.args))))
                    break
                if child.op == "symbol":
                    where = position.get(child)
                    if where is None or len(variables) == MAX_TERM_VARIABLES:
                        return None
                    key.append(len(variables))
                    variables.append(where)
                elif (lifted is not None and node.op in LIFTABLE and child not in pinned
                      and math.isfinite(child.value)):
                    params[child] = len(params)
                    key += ("$p", params[child])
                    lifted.append(child)
                else:
                    key.append(child)
                local[child] = len(local)
                if nodes is not None:
                    nodes.append(child)
        else:
            stack.pop()
            key.append(node.op)
            key.append(tuple([local[a] for a in args.get(node, node.args)]))
            local[node] = len(local)
            if nodes is not None:
                nodes.append(node)
            if len(local) > MAX_TERM_NODES:
                return None
    return tuple(key), variables


def _structural_args(term: Node, position: dict[Node, int]) -> dict[Node, tuple[Node, ...]]:
    """The arguments of `term`'s commutative nodes in an order of their structure (ops,
    variables and constants as such, not which or what value), then of the first variable
    each reads: a sum's nodes are ordered by their digests, so ``a*exp(-b/T)`` and
    ``exp(-b/T)*a`` both occur as its coefficients vary, and ``w0*x0 + w1*x1`` walks its
    weights in any order; walked in this order, terms of one formula have one shape, and
    terms over the same variables the same table rows."""
    structure: dict[Node, tuple] = {}
    first: dict[Node, int] = {}  # the lowest position of a variable below a node (-1: none)
    ordered: dict[Node, tuple[Node, ...]] = {}
    stack = [(term, False)]
    while stack:  # (iterative post-order)
        node, done = stack.pop()
        if node in structure:
            continue
        if not node.args:
            structure[node] = ("v",) if node.op == "symbol" else ("c",)
            first[node] = position.get(node, -1) if node.op == "symbol" else -1
        elif done:
            children = node.args
            if OPS[node.op].commutative:
                children = tuple(sorted(children, key=lambda a: (structure[a], first[a])))
                ordered[node] = children
            structure[node] = (node.op, *(structure[a] for a in children))
            first[node] = min((first[a] for a in children if first[a] >= 0), default=-1)
        else:
            stack.append((node, True))
            stack.extend((a, False) for a in node.args if a not in structure)
    return ordered


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


def group_terms(kind_of: np.ndarray, arity: np.ndarray, flat: np.ndarray, n: int,
                max_kinds: int, joinable: np.ndarray | None = None
                ) -> list[tuple[int, list[tuple[int, int]], np.ndarray, np.ndarray]] | None:
    """The kinds of term to compile, as (shape number, joined one-variable shapes as (shape
    number, slot), the (terms, variables) table, the terms' numbers), or None when there are
    more than `max_kinds`. A one-variable term joins a wider term over its variable (Rosenbrock's
    (1 - x[i])**2 joins 100*(x[i+1] - x[i]**2)**2): fewer kinds and passes, fewer entries. The
    host is where the variable comes first in its term (then the first such term), so that
    hosts of the same shape take their joiners at the same place: one kind, not many. Only
    terms `joinable` (default: all) join: a term with parameters of its own stays a kind."""
    count = len(kind_of)
    starts = np.cumsum(arity) - arity
    term_of = np.repeat(np.arange(count), arity)
    slot_of = np.arange(len(flat)) - np.repeat(starts, arity)
    wide = np.repeat(arity > 1, arity)
    v, slot, host = flat[wide], slot_of[wide], term_of[wide]
    best = np.lexsort((host, slot, v))  # by variable, then slot, then term
    v, slot, host = v[best], slot[best], host[best]
    first = np.ones(len(v), bool)
    first[1:] = v[1:] != v[:-1]
    host_of, slot_in = np.full(n, -1), np.zeros(n, np.int64)
    host_of[v[first]], slot_in[v[first]] = host[first], slot[first]
    single = np.flatnonzero((arity == 1) if joinable is None else (arity == 1) & joinable)
    joins = single[host_of[flat[starts[single]]] >= 0]
    lone = np.ones(count, bool)
    lone[joins] = False  # inside its host
    variable = flat[starts[joins]]
    hosts, codes = host_of[variable], kind_of[joins] * MAX_TERM_VARIABLES + slot_in[variable]
    by_host = np.lexsort((codes, hosts))
    hosts, codes = hosts[by_host], codes[by_host]
    # A host's signature: its kind, then its joiners' codes. Each distinct tuple of codes is
    # ranked as the tuples sort (a shorter one that is a prefix first, as a row padded with
    # -1 would): a table of every host's codes would be as wide as the most joiners of one
    # host (dirichlet_multinomial@3528: 7,000 rows of 3,529, 0.5 s to fill and sort).
    per_host = np.bincount(hosts, minlength=count)
    joined = np.flatnonzero(per_host)
    runs = [tuple(part.tolist()) for part in np.split(codes, np.cumsum(per_host[joined])[:-1])
            ] if len(joined) else []  # (codes are by host: `by_host`)
    distinct = sorted(set(runs))
    rank = {r: k + 1 for k, r in enumerate(distinct)}  # 0: no joiners
    joins_of = np.zeros(count, np.int64)
    joins_of[joined] = [rank[r] for r in runs]
    kept = np.flatnonzero(lone)
    rows = np.stack([kind_of[kept], joins_of[kept]], axis=1)
    order = np.lexsort(rows.T[::-1])  # rows sorted (np.unique(axis=0) is slower)
    rows, kept = rows[order], kept[order]
    starts_of = np.flatnonzero(np.r_[True, (rows[1:] != rows[:-1]).any(axis=1)])
    if len(starts_of) > max_kinds:
        return None
    found = []
    for g, first in enumerate(starts_of.tolist()):
        kind, joins = rows[first].tolist()
        members = np.sort(kept[first:starts_of[g + 1] if g + 1 < len(starts_of) else None])
        k = int(arity[members[0]])
        table = flat[starts[members][:, None] + np.arange(k)]
        parts = [(c // MAX_TERM_VARIABLES, c % MAX_TERM_VARIABLES)
                 for c in (distinct[joins - 1] if joins else ())]
        found.append((kind, parts, table, members))
    return found


def term_template(order: list[Node], stand_ins: Sequence[Node],
                  params: dict[Node, Node] | None = None) -> Node:
    """The term of `order` rebuilt node for node, its variables (in order of first use)
    replaced by `stand_ins`, its lifted constants by theirs in `params`."""
    made: dict[Node, Node] = {}
    used = 0
    for node in order:
        if node.op == "symbol":
            made[node] = stand_ins[used]
            used += 1
        elif node.op == "const":
            made[node] = params.get(node, node) if params else node
        else:
            made[node] = intern(node.op, tuple(made[a] for a in node.args), None)
    return made[order[-1]]
