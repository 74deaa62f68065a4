"""Sparse Hessians of large sums of small terms, from one small kernel per kind of term.

Chained, banded and grid energies are sums of many terms, each over a few variables, and
most terms are the same formula on other variables (Rosenbrock's ``100*(x[i+1] - x[i]**2)**2
+ (1 - x[i])**2``; a stencil's ``(u[i+1, j] - u[i, j])**2``). Differentiating the whole sum
symbolically costs seconds of per-node Python work per 10^5 variables, and its program runs
on the tape. Here instead:

1. the sum's terms are read once (`split_terms`) and grouped by their shape: the term with
   its variables numbered in order of first use (`_shape`), constants by identity;
2. each shape becomes a template over stand-in variables, compiled once with its value,
   gradient and dense local Hessian (a straight-line kernel of a few dozen operations);
3. a Hessian is the template's batch kernel over the rows of gathered local variables,
   scattered into the pattern's slots (the pattern is the union of the local ones, so it is
   `hessian_sparsity`'s); H v gathers v as well and scatters the local products.

Values equal the symbolic sparse kernels' up to rounding (the terms' contributions are
added in another order). Terms with more than `MAX_TERM_VARIABLES` variables, or with
symbols that are not variables (parameters), leave the sum to the symbolic kernels.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..ad.sparsity import hessian_sparsity
from ..backends.registry import BACKENDS, Backend
from ..ir.node import Node, _intern, symbol
from ..ir.opspec import generation
from ..ir.traversal import bulk
from ..lower.products import VALUE_GRAD_HESS
from .build import build

MIN_TERMS = 1_000  # below, the symbolic sparse kernels are built (they are exact and cheap)
MAX_TERM_VARIABLES = 8
MAX_TERM_NODES = 400
FEW_TERMS = 64  # kinds with fewer terms (a chain's ends, a grid's corners) run in Python
CHUNK_TERMS = 4_096  # terms per call of a template's batch kernel (its rows stay in cache)


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


def _shape(term: Node, position: dict[Node, int]) -> tuple[tuple, list[int], list[Node]] | None:
    """(shape key, the global positions of its variables in order of first use, its nodes in
    topological order), or None when `term` is too big or uses a symbol outside `position`.
    The key lists, node by node: an op's name and its arguments' local numbers, a variable's
    slot (an int), a constant (the node itself: nodes are interned)."""
    local: dict[Node, int] = {}
    order: list[Node] = []
    key: list = []
    variables: list[int] = []
    stack = [term]
    push = stack.append
    while stack:
        node = stack.pop()
        if node in local:
            continue
        args = node.args
        if args:
            pending = [a for a in args if a not in local]
            if pending:
                push(node)
                pending.reverse()
                stack.extend(pending)
                continue
            key.append(node.op)
            key.append(tuple([local[a] for a in args]))
        elif node.op == "symbol":
            where = position.get(node)
            if where is None or len(variables) == MAX_TERM_VARIABLES:
                return None
            key.append(len(variables))
            variables.append(where)
        else:
            key.append(node)
        local[node] = len(order)
        order.append(node)
        if len(order) > MAX_TERM_NODES:
            return None
    return tuple(key), variables, order


def _template(order: list[Node], stand_ins: Sequence[Node]) -> Node:
    """The term of `order` rebuilt node for node, its variables (in order of first use)
    replaced by `stand_ins`."""
    made: dict[Node, Node] = {}
    used = 0
    for node in order:
        if node.op == "symbol":
            made[node] = stand_ins[used]
            used += 1
        elif node.op == "const":
            made[node] = node
        else:
            made[node] = _intern(node.op, tuple(made[a] for a in node.args), None)
    return made[order[-1]]


def _gather(x, index, X):  # X[t, j] = x[index[t, j]]
    for t in range(index.shape[0]):
        for j in range(index.shape[1]):
            X[t, j] = x[index[t, j]]


def _scatter_entries(out, local, slots, values):  # values[slots[t, e]] += out[t, local[e]]
    for t in range(out.shape[0]):
        for e in range(local.size):
            values[slots[t, e]] += out[t, local[e]]


def _scatter_products(out, index, v, result):  # result[index[t]] += H_t @ v[index[t]]
    k = index.shape[1]
    for t in range(out.shape[0]):
        for i in range(k):
            acc = 0.0
            for j in range(k):
                acc += out[t, 1 + k + i * k + j] * v[index[t, j]]
            result[index[t, i]] += acc


_COMPILED: dict = {}


def _loops():
    """The gather and scatter loops, compiled by Numba on first use (cached on disk)."""
    if not _COMPILED:
        import numba

        for f in (_gather, _scatter_entries, _scatter_products):
            _COMPILED[f.__name__] = numba.njit(cache=True, nogil=True)(f)
    return _COMPILED


class _Kind:
    """One shape of term: its compiled template and the variables of each of its terms."""

    def __init__(self, template: Node, stand_ins: list[Node], rows: list[list[int]],
                 backend: Backend, cache_dir, strategy: str) -> None:
        self.k = k = len(stand_ins)
        index = np.asarray(rows, dtype=np.int32).reshape(len(rows), k)  # less to read
        # Terms by their variables: a sum's own order is its nodes' digests, and gathering
        # and scattering in that order would miss the cache at every term.
        self.index = index[np.lexsort(index.T[::-1])] if k else index
        if len(rows) < FEW_TERMS:  # not worth a compile
            backend = BACKENDS["python"]
        built = build([template], stand_ins, stand_ins, backend=backend,
                      products=[VALUE_GRAD_HESS], cache_dir=cache_dir, strategy=strategy)
        self.batch = built.batches[VALUE_GRAD_HESS.name]  # chunks below: the calling thread
        self.width = 1 + k + k * k
        # Compiled now, while the garbage collector is paused (`separable_sum` is bulk work):
        # on a first call, beside millions of live nodes, each collection would take seconds.
        self.batch(np.zeros((1, k)), np.empty((1, self.width)))
        self._buffers: tuple[np.ndarray, np.ndarray] | None = None
        local_rows, local_cols = hessian_sparsity(template, stand_ins)
        self.local = 1 + k + local_rows * k + local_cols  # columns of OUT, lower triangle
        g_rows = self.index[:, local_rows].astype(np.int64)
        g_cols = self.index[:, local_cols].astype(np.int64)
        self.pairs = np.maximum(g_rows, g_cols), np.minimum(g_rows, g_cols)  # (terms, pairs)

    def chunks(self, x: np.ndarray):
        """(first term, local rows) chunk by chunk: per term of the chunk, the template's
        value, local gradient and dense local Hessian. The buffers are reused (and small
        enough to stay in cache), so each chunk is read before the next is asked for."""
        if self._buffers is None:
            rows = min(CHUNK_TERMS, len(self.index))
            self._buffers = np.empty((rows, self.k)), np.empty((rows, self.width))
        X, out = self._buffers
        gather = _loops()["_gather"]
        for start in range(0, len(self.index), CHUNK_TERMS):
            index = self.index[start:start + CHUNK_TERMS]
            rows = len(index)
            gather(x, index, X[:rows])
            self.batch(X[:rows], out[:rows])
            yield start, out[:rows]


class SeparableSum:
    """The sparse Hessian (lower triangle, pattern order) and H v of a sum of small terms
    over `wrt` (positions `columns` in the point), from one kernel per shape of term."""

    def __init__(self, kinds: list[_Kind], n: int, columns: np.ndarray) -> None:
        self.kinds, self.n, self.columns = kinds, n, columns
        keys = np.concatenate([(r * n + c).ravel() for r, c in (k.pairs for k in kinds)])
        unique, slot = np.unique(keys, return_inverse=True)
        self.pattern = unique // n, unique % n
        self.nnz = len(unique)
        loops = _loops()  # compiled (or loaded) now, as the templates are
        loops["_gather"](np.zeros(1), np.zeros((1, 1), np.int32), np.empty((1, 1)))
        loops["_scatter_entries"](np.zeros((1, 1)), np.zeros(1, np.int64),
                                  np.zeros((1, 1), np.int32), np.zeros(1))
        loops["_scatter_products"](np.zeros((1, 3)), np.zeros((1, 1), np.int32), np.zeros(1),
                                   np.zeros(1))
        self._slots, start = [], 0  # per kind: (terms, local pairs) -> slot in the pattern
        for kind in kinds:
            size = kind.pairs[0].size
            self._slots.append(slot[start:start + size].reshape(kind.pairs[0].shape)
                               .astype(np.int32))
            start += size

    def _x(self, point: np.ndarray) -> np.ndarray:
        point = np.asarray(point, dtype=np.float64)
        return point if self.columns is None else point[self.columns]

    def hessian_values(self, point: np.ndarray) -> np.ndarray:
        x, scatter = self._x(point), _loops()["_scatter_entries"]
        values = np.zeros(self.nnz)
        for kind, slots in zip(self.kinds, self._slots):
            for start, out in kind.chunks(x):
                scatter(out, kind.local, slots[start:start + len(out)], values)
        return values

    def hessp(self, point: np.ndarray, v: np.ndarray) -> np.ndarray:
        x, v = self._x(point), np.ascontiguousarray(v, dtype=np.float64)
        result, scatter = np.zeros(self.n), _loops()["_scatter_products"]
        for kind in self.kinds:
            for start, out in kind.chunks(x):
                scatter(out, kind.index[start:start + len(out)], v, result)
        return result


_LAST: list = [None, None]  # (key, SeparableSum or None) of the last sum asked about


@bulk
def separable_sum(f: Node, args: Sequence[Node], wrt: Sequence[Node], *, backend: Backend,
                  cache_dir: str | os.PathLike | None = None, strategy: str = "auto",
                  min_terms: int | None = None) -> SeparableSum | None:
    # `strategy` is the templates' own: "auto" makes them straight-line kernels (they are
    # small), whatever the sum's own kernels chose.
    """`f`'s SeparableSum over `wrt` (points list `args`), or None when `f` is not a sum of
    at least `min_terms` (default `MIN_TERMS`) small terms over the variables alone."""
    key = (generation(), f, tuple(args), tuple(wrt), backend.name, strategy, min_terms)
    if _LAST[0] == key:
        return _LAST[1]
    found = _separable(f, args, wrt, backend, cache_dir, strategy,
                       MIN_TERMS if min_terms is None else min_terms)
    _LAST[:] = [key, found]
    return found


def _separable(f, args, wrt, backend, cache_dir, strategy, min_terms) -> SeparableSum | None:
    terms = split_terms(f)
    if len(terms) < min_terms or len(set(wrt)) != len(wrt) or len(wrt) >= 2**31:
        return None
    position = {v: i for i, v in enumerate(wrt)}
    shaped, first = [], {}  # per term (key, variables); the first term of each key's nodes
    for term in terms:
        if term.op == "const":
            continue  # no derivatives
        found = _shape(term, position)
        if found is None:
            return None
        key, variables, order = found
        if variables:
            shaped.append((key, variables))
            first.setdefault(key, order)
    # A one-variable term joins a wider term over its variable (Rosenbrock's
    # (1 - x[i])**2 joins 100*(x[i+1] - x[i]**2)**2): fewer kinds and passes, fewer entries.
    # The host is where the variable comes first in its term (then the first such term), so
    # that hosts of the same shape take their joiners at the same place: one kind, not many.
    host_of: dict[int, int] = {}
    best: dict[int, int] = {}
    for t, (_, variables) in enumerate(shaped):
        if len(variables) > 1:
            for slot, v in enumerate(variables):
                if slot < best.get(v, MAX_TERM_VARIABLES + 1):
                    best[v], host_of[v] = slot, t
    joined: dict[int, list[tuple[tuple, int]]] = {}
    for key, variables in shaped:
        host = host_of.get(variables[0]) if len(variables) == 1 else None
        if host is not None:
            joined.setdefault(host, []).append((key, shaped[host][1].index(variables[0])))
    groups: dict[tuple, list[list[int]]] = {}
    for t, (key, variables) in enumerate(shaped):
        if len(variables) == 1 and variables[0] in host_of:
            continue  # inside its host
        groups.setdefault((key, tuple(joined.get(t, ()))), []).append(variables)
    kinds = []
    for (key, parts), rows in groups.items():
        stand_ins = [symbol(f"_sep[{i}]") for i in range(len(rows[0]))]
        template = _template(first[key], stand_ins)
        if parts:
            template = _intern("add", (template, *[_template(first[k], [stand_ins[slot]])
                                                   for k, slot in parts]), None)
        kinds.append(_Kind(template, stand_ins, rows, backend, cache_dir, strategy))
    if not kinds:
        return None
    arg_position = {a: i for i, a in enumerate(args)}
    columns = np.asarray([arg_position[v] for v in wrt], dtype=np.int64)
    same = len(args) == len(wrt) and bool((columns == np.arange(len(wrt))).all())
    return SeparableSum(kinds, len(wrt), None if same else columns)
