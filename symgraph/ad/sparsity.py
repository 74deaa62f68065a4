"""Sparsity patterns of Jacobians and Hessians, read from the DAG without differentiating it.

One forward pass propagates each node's dependency set (the variables it depends on through
differentiable edges: an op's argument whose partial is None, like a comparison's or floor's,
carries none). A Jacobian row is its output's set. A Hessian entry (p, q) is structurally
nonzero when some node v, reached from f through differentiable edges (its adjoint is not
structurally zero), has arguments a_i, a_j with d2 op/da_i da_j not structurally zero, p in
D(a_i) and q in D(a_j): the Hessian is the sum over nodes of the adjoint times the op's local
Hessian pushed through its arguments' Jacobians (the "edge pushing" formula). Which pairs of an
op's arguments interact is learnt once per op and arity, by differentiating the op table's own
partials on stand-in symbols, so the pattern is that of the symbolic Hessian (``sg.hessian``),
but through a product with a constant 0 factor (kept: 0 * inf is nan): a derivative through it
is 0 * its adjoint, structurally zero only where that adjoint folds to a constant, so the
pattern may hold entries the symbolic derivative folded away (never fewer). So may
``pow_prev(x, y, p)`` with a p of its own (the differentiator only builds it with p = x**y):
its (y, p) second partial is zero on each side of its piecewise definition, which
``sg.hessian`` can fold where the op's rule, learnt on free stand-ins, keeps the pair.

Patterns come as (rows, cols) int64 arrays sorted row by row; Hessians give the lower triangle
(rows >= cols). Every pass is iterative; sets are shared between nodes where they are equal.
A sum of at least `SUM_MIN_TERMS` small terms over the variables alone gets its Hessian
pattern from one term per shape (ad.terms): the same pattern, without the pass over 10^6 nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..frontends.coerce import as_expression, as_symbols
from ..ir.node import Node, apply, symbol
from ..ir.ops import OPS
from ..ir.opspec import generation
from ..ir.traversal import bulk, topological_order
from .terms import sum_hessian_pattern

_EMPTY: frozenset[int] = frozenset()
# (op, arity) -> (differentiable argument positions, interacting pairs (i, j), i <= j)
_LOCAL: dict[tuple[str, int], tuple] = {}
_NO_RULE = ((), ())
_WIDE = 6  # n-ary ops wider than this reuse the rule learnt at this width
SUM_MIN_TERMS = 1_000  # a sum of this many small terms: its pattern from its terms' shapes


def _learn(op: str, arity: int) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """Which arguments of `op` carry derivatives, and which pairs have a nonzero second
    partial: the op table's partials on stand-in symbols, differentiated once more."""
    from .differentiate import vjp  # differentiate imports nothing of this module

    stand_ins = [symbol(f"_sparsity_arg{i}") for i in range(arity)]
    node = apply(op, *stand_ins)
    if node.op != op or node.args != tuple(stand_ins):  # folded on stand-ins: be conservative
        return tuple(range(arity)), tuple((i, j) for i in range(arity) for j in range(i, arity))
    partials = OPS[op].partials(node.args, node)
    live, pairs = [], set()
    for i, partial in enumerate(partials):
        if partial is None:
            continue
        live.append(i)
        if isinstance(partial, Node):
            second = vjp([partial], [1.0], stand_ins)
            for j, d in enumerate(second):
                if not (d.is_const and d.value == 0.0):
                    pairs.add((min(i, j), max(i, j)))
    return tuple(live), tuple(sorted(pairs))


def local_rule(op: str, arity: int) -> tuple:
    """(differentiable argument positions, interacting argument pairs) of `op` at `arity`."""
    key = (op, arity)
    rule = _LOCAL.get(key)
    if rule is None:
        if OPS[op].arity < 0 and arity > _WIDE:
            live, pairs = local_rule(op, _WIDE)
            rule = _widen(live, pairs, arity)
        else:
            rule = _learn(op, arity)
        _LOCAL[key] = rule
    return rule


class _Wide:
    """The interacting pairs of a wide n-ary op (its arguments are interchangeable), listed
    only when asked: a 10^5-term sum has none, and must not cost 10^10 checks."""

    def __init__(self, arity: int, diagonal: bool, off: bool) -> None:
        self.arity, self.diagonal, self.off = arity, diagonal, off

    def __iter__(self):
        for i in range(self.arity):
            if self.diagonal:
                yield i, i
            if self.off:
                for j in range(i + 1, self.arity):
                    yield i, j


def _widen(live, pairs, arity):
    """An n-ary op's rule at a larger width."""
    all_live = tuple(range(arity)) if live else ()
    off = any(i != j for i, j in pairs)
    diagonal = any(i == j for i, j in pairs)
    return all_live, (_Wide(arity, diagonal, off) if off or diagonal else ())


class _Pass:
    """One forward pass over the DAG of `outputs`: dependency sets over `wrt`'s positions."""

    def __init__(self, outputs: Sequence[Node], wrt: Sequence[Node]) -> None:
        self.order = topological_order(outputs)
        index = {v: i for i, v in enumerate(wrt)}
        deps: dict[Node, frozenset[int]] = {}
        self.rules = rules = {}  # node -> its local rule (one lookup per node, kept)
        known = _LOCAL
        for node in self.order:
            args = node.args
            if not args:
                position = index.get(node)
                deps[node] = _EMPTY if position is None else frozenset((position,))
                continue
            rule = known.get((node.op, len(args)))
            if rule is None:
                rule = local_rule(node.op, len(args))
            rules[node] = rule
            live = rule[0]
            found = None
            merged = None  # a set being filled, when two or more args differ (linear work)
            for i in live:
                d = deps[node.args[i]]
                if not d or d is found:
                    continue
                if found is None:
                    found = d
                elif merged is None:
                    merged = set(found)
                    merged.update(d)
                else:
                    merged.update(d)
            if merged is not None:
                found = frozenset(merged)
            deps[node] = found if found is not None else _EMPTY
        self.deps = deps

    def interactions(self, node: Node):
        """(D(a_i), D(a_j)) for the interacting argument pairs of `node`, both nonempty."""
        pairs = self.rules[node][1]
        deps = self.deps
        for i, j in pairs:
            di, dj = deps[node.args[i]], deps[node.args[j]]
            if di and dj:
                yield di, dj


def _pattern(rows: list[int], cols: list[int]) -> tuple[np.ndarray, np.ndarray]:
    r = np.asarray(rows, dtype=np.int64)
    c = np.asarray(cols, dtype=np.int64)
    order = np.lexsort((c, r))
    return r[order], c[order]


@bulk
def jacobian_sparsity(outputs: Sequence | Node, wrt: Sequence | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the structurally nonzero entries of d outputs / d wrt, row by row."""
    outputs = [as_expression(o) for o in ([outputs] if isinstance(outputs, Node) else outputs)]
    wrt = as_symbols(wrt, outputs, role="the variables of a sparsity pattern")
    deps = _Pass(outputs, wrt).deps
    rows, cols = [], []
    for k, output in enumerate(outputs):
        found = sorted(deps[output])
        rows.extend([k] * len(found))
        cols.extend(found)
    return _pattern(rows, cols)


def _adjoint_live(state: _Pass, roots: Sequence[Node]) -> set[Node]:
    """Nodes with a structurally nonzero adjoint: reached from `roots` through differentiable
    edges along which something depends on the variables."""
    deps = state.deps
    live = {r for r in roots if deps[r]}
    for node in reversed(state.order):
        if node in live and node.args:
            for i in state.rules[node][0]:
                arg = node.args[i]
                if deps[arg]:
                    live.add(arg)
    return live


_LAST_HESSIAN: list = [None, None]  # (key, pattern) of the last Hessian pattern asked for


@bulk
def hessian_sparsity(f, wrt: Sequence | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the structurally nonzero entries of the Hessian of scalar `f` w.r.t.
    `wrt`, lower triangle (rows >= cols), row by row. The last one is kept: a function's
    pattern, sparse Hessian and Lagrangian ask for it in turn (seconds at 10^5 variables)."""
    f = as_expression(f)
    wrt = as_symbols(wrt, [f], role="the variables of a sparsity pattern")
    key = (generation(), f, tuple(wrt))
    if _LAST_HESSIAN[0] != key:
        _LAST_HESSIAN[:] = [key, _hessian_pattern(f, wrt)]
    rows, cols = _LAST_HESSIAN[1]
    return rows.copy(), cols.copy()


def _hessian_pattern(f: Node, wrt: Sequence[Node]) -> tuple[np.ndarray, np.ndarray]:
    # A large sum of small terms: one term's pattern per shape (seconds less at 10^5 terms)
    found = sum_hessian_pattern(f, wrt, SUM_MIN_TERMS, _dag_pattern)
    return _dag_pattern(f, wrt) if found is None else found


def _dag_pattern(f: Node, wrt: Sequence[Node]) -> tuple[np.ndarray, np.ndarray]:
    state = _Pass([f], wrt)
    live = _adjoint_live(state, [f])
    neighbours: dict[int, set[int]] = {}
    seen: set[tuple[frozenset, frozenset]] = set()  # repeated (D_i, D_j) products add nothing
    for node in state.order:
        if not state.rules.get(node, _NO_RULE)[1] or node not in live:
            continue
        for di, dj in state.interactions(node):
            key = (di, dj) if id(di) <= id(dj) else (dj, di)  # identity only to skip repeats
            if key in seen:
                continue
            seen.add(key)
            for p in di:
                row = neighbours.get(p)
                if row is None:
                    neighbours[p] = row = set()
                row.update(q for q in dj if q <= p)
            for q in dj:
                row = neighbours.get(q)
                if row is None:
                    neighbours[q] = row = set()
                row.update(p for p in di if p <= q)
    rows, cols = [], []
    for p in sorted(neighbours):
        found = sorted(neighbours[p])
        rows.extend([p] * len(found))
        cols.extend(found)
    return _pattern(rows, cols)


@bulk
def affine_outputs(outputs: Sequence | Node, wrt: Sequence | None = None) -> np.ndarray:
    """Per output, True when it is affine in `wrt` (its Hessian is structurally zero)."""
    outputs = [as_expression(o) for o in ([outputs] if isinstance(outputs, Node) else outputs)]
    wrt = as_symbols(wrt, outputs, role="the variables of a sparsity pattern")
    state = _Pass(outputs, wrt)
    curved: set[Node] = set()  # nonlinear in wrt
    for node in state.order:
        if not node.args:
            continue
        args_curved = any(node.args[i] in curved for i in state.rules[node][0])
        if args_curved or any(state.interactions(node)):
            curved.add(node)
    return np.array([o not in curved for o in outputs], dtype=bool)
