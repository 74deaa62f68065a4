"""Value, gradient, sparse Hessian and H v of large sums of small terms, kind by kind.

Chained, banded and grid energies are sums of many terms, each over a few variables, and
most terms are the same formula on other variables (Rosenbrock's ``100*(x[i+1] - x[i]**2)**2
+ (1 - x[i])**2``; a stencil's ``(u[i+1, j] - u[i, j])**2``). Differentiating the whole sum
symbolically costs seconds of per-node Python work per 10^5 variables, and its program runs
on the tape. Here instead:

1. the sum's terms are read once (`split_terms`) and grouped by their shape: the term with
   its variables numbered in order of first use (`_shape`), constants by identity;
2. each shape becomes a template over stand-in variables, differentiated once: its value and
   gradient, and its local Hessian's nonzeros (programs of a few dozen steps);
3. one generated module (backends.numba.sums) has the value, value+gradient, sparse Hessian
   and H v kernels: each one loop per kind that reads a term's variables, runs the kind's
   steps and adds the results where they go (the gradient's entries, the pattern's slots; the
   pattern is the union of the local ones, so it is `hessian_sparsity`'s).

Values equal the symbolic kernels' up to rounding (the terms' contributions are added in
another order). Terms with more than `MAX_TERM_VARIABLES` variables, or with symbols that are
not variables (parameters), leave the sum to the symbolic kernels.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..ad.sparsity import hessian_sparsity
from ..ad.terms import MAX_TERM_VARIABLES, split_terms, term_shape
from ..backends.numba.sums import SumKind, emit_sum_kernels
from ..backends.registry import BACKENDS, Backend
from ..ir.node import Node, _intern, symbol
from ..ir.opspec import generation
from ..ir.traversal import bulk
from ..lower.products import VALUE_GRAD
from ..lower.programs import build_programs, describe
from ..lower.sparse_products import sparse_hessian_product
from ..version import __version__
from .loading import load_source

MIN_TERMS = 1_000  # below, the symbolic sparse kernels are built (they are exact and cheap)
MAX_KINDS = 32  # more kinds of term: the fused kernels would be too long to compile


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


class _Kind:
    """One shape of term: its template's programs and the variables of each of its terms."""

    def __init__(self, template: Node, stand_ins: list[Node], rows: np.ndarray) -> None:
        self.k = len(stand_ins)
        self.template = template
        index = rows.astype(np.int32)  # less to read
        # Terms by their variables: a sum's own order is its nodes' digests, and reading and
        # adding in that order would miss the cache at every term.
        self.index = index[np.lexsort(index.T[::-1])]
        local_rows, local_cols = hessian_sparsity(template, stand_ins)
        gradient, hess = build_programs([template], stand_ins, stand_ins, products=[
            VALUE_GRAD, sparse_hessian_product(len(local_rows))])
        self.emitted = SumKind(gradient, hess, list(zip(local_rows.tolist(),
                                                        local_cols.tolist())))
        g_rows = self.index[:, local_rows].astype(np.int64)
        g_cols = self.index[:, local_cols].astype(np.int64)
        self.pairs = np.maximum(g_rows, g_cols), np.minimum(g_rows, g_cols)  # (terms, pairs)


_SIGNATURES = {"value": 1, "value_grad": 2, "hessian": 2, "hessp": 3}  # arrays before tables


class SeparableSum:
    """Value, gradient, sparse Hessian (lower triangle, pattern order) and H v of a sum of
    small terms over `wrt` (positions `columns` in the point), from one fused loop per kind of
    term (backends.numba.sums): each kernel compiled (or loaded from Numba's cache) on its
    first call."""

    def __init__(self, kinds: list[_Kind], n: int, columns: np.ndarray | None,
                 cache_dir: str | os.PathLike | None = None, offset: float = 0.0,
                 size: int | None = None) -> None:
        self.kinds, self.n, self.columns = kinds, n, columns
        self.size = n if size is None else size  # values in a point (the arguments)
        self.offset = offset  # the sum's constant terms
        keys = np.concatenate([(r * n + c).ravel() for r, c in (k.pairs for k in kinds)])
        unique, slot = np.unique(keys, return_inverse=True)
        self.pattern = unique // n, unique % n
        self.nnz = len(unique)
        self._slots, start = [], 0  # per kind: (terms, local pairs) -> slot in the pattern
        for kind in kinds:
            size = kind.pairs[0].size
            self._slots.append(slot[start:start + size].reshape(kind.pairs[0].shape)
                               .astype(np.int32))
            start += size
        # (not the number of terms: the same formulas at another size are the same file,
        # whose machine code Numba's cache keeps)
        description = [f"kind {number} ({kind.k} variables): {line}"
                       for number, kind in enumerate(kinds)
                       for line in describe([kind.template], ["term"])]
        source = emit_sum_kernels([kind.emitted for kind in kinds],
                                  "Fused kernels of a sum of small terms", description,
                                  __version__)
        self.module, self.path = load_source(source, cache_dir)
        BACKENDS["numba"].load(self.module)
        self.source = source
        self._tables = [kind.index for kind in kinds]
        self._hess_tables = [t for kind, s in zip(kinds, self._slots) for t in (kind.index, s)]
        self._ready: dict[str, object] = {}

    @bulk  # Numba's compile beside millions of live nodes: each collection would take seconds
    def _compile(self, name: str) -> object:
        kernel = getattr(self.module, name)
        tables = self._hess_tables if name == "hessian" else self._tables
        small = [np.zeros((0,) + t.shape[1:], np.int32) for t in tables]
        kernel(*[np.zeros(1)] * _SIGNATURES[name], *small)
        self._ready[name] = kernel
        return kernel

    def kernel(self, name: str) -> object:
        """The compiled kernel `name` (value, value_grad, hessian, hessp)."""
        return self._ready.get(name) or self._compile(name)

    def _x(self, point: np.ndarray) -> np.ndarray:
        point = np.ascontiguousarray(point, dtype=np.float64)
        if point.shape != (self.size,):  # the kernels index it unchecked
            raise ValueError(f"expected a point of {self.size} values, got shape "
                             f"{point.shape}")
        return point if self.columns is None else np.ascontiguousarray(point[self.columns])

    def _vector(self, v: np.ndarray, what: str) -> np.ndarray:
        v = np.ascontiguousarray(v, dtype=np.float64)
        if v.shape != (self.n,):
            raise ValueError(f"{what} needs {self.n} values, got shape {v.shape}")
        return v

    def value(self, point: np.ndarray) -> float:
        return self.kernel("value")(self._x(point), *self._tables) + self.offset

    def value_and_grad(self, point: np.ndarray, gradient: np.ndarray | None = None
                       ) -> tuple[float, np.ndarray]:
        """(value, gradient); `gradient` (float64, C order, n values): filled and returned."""
        if gradient is None:
            gradient = np.zeros(self.n)
        elif not (gradient.shape == (self.n,) and gradient.dtype == np.float64
                  and gradient.flags.c_contiguous and gradient.flags.writeable):
            raise ValueError(f"the gradient goes into a writeable float64 C-ordered array of "
                             f"{self.n} values")
        else:
            gradient[:] = 0.0
        value = self.kernel("value_grad")(self._x(point), gradient, *self._tables)
        return value + self.offset, gradient

    def hessian_values(self, point: np.ndarray) -> np.ndarray:
        values = np.zeros(self.nnz)
        self.kernel("hessian")(self._x(point), values, *self._hess_tables)
        return values

    def hessp(self, point: np.ndarray, v: np.ndarray) -> np.ndarray:
        v = self._vector(v, "hessp's vector")
        result = np.zeros(self.n)
        self.kernel("hessp")(self._x(point), v, result, *self._tables)
        return result


def _groups(kind_of: np.ndarray, arity: np.ndarray, flat: np.ndarray, n: int
            ) -> list[tuple[int, list[tuple[int, int]], np.ndarray]] | None:
    """The kinds of term to compile, as (shape number, joined one-variable shapes as (shape
    number, slot), the (terms, variables) table), or None when there are more than
    `MAX_KINDS`. A one-variable term joins a wider term over its variable (Rosenbrock's
    (1 - x[i])**2 joins 100*(x[i+1] - x[i]**2)**2): fewer kinds and passes, fewer entries. The
    host is where the variable comes first in its term (then the first such term), so that
    hosts of the same shape take their joiners at the same place: one kind, not many."""
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
    single = np.flatnonzero(arity == 1)
    joins = single[host_of[flat[starts[single]]] >= 0]
    lone = np.ones(count, bool)
    lone[joins] = False  # inside its host
    variable = flat[starts[joins]]
    hosts, codes = host_of[variable], kind_of[joins] * MAX_TERM_VARIABLES + slot_in[variable]
    by_host = np.lexsort((codes, hosts))
    hosts, codes = hosts[by_host], codes[by_host]
    per_host = np.bincount(hosts, minlength=count)
    signature = np.full((count, 1 + int(per_host.max(initial=0))), -1, np.int64)
    signature[:, 0] = kind_of
    place = np.arange(len(hosts)) - (np.cumsum(per_host) - per_host)[hosts]
    signature[hosts, 1 + place] = codes
    kept = np.flatnonzero(lone)
    rows = signature[kept]
    order = np.lexsort(rows.T[::-1])  # rows sorted (np.unique(axis=0) is slower)
    rows, kept = rows[order], kept[order]
    starts_of = np.flatnonzero(np.r_[True, (rows[1:] != rows[:-1]).any(axis=1)])
    if len(starts_of) > MAX_KINDS:
        return None
    found = []
    for g, first in enumerate(starts_of.tolist()):
        row = rows[first].tolist()
        members = np.sort(kept[first:starts_of[g + 1] if g + 1 < len(starts_of) else None])
        k = int(arity[members[0]])
        table = flat[starts[members][:, None] + np.arange(k)]
        parts = [(c // MAX_TERM_VARIABLES, c % MAX_TERM_VARIABLES) for c in row[1:] if c >= 0]
        found.append((row[0], parts, table))
    return found


_LAST: list = [None, None]  # (key, SeparableSum or None) of the last sum asked about


@bulk
def separable_sum(f: Node, args: Sequence[Node], wrt: Sequence[Node], *, backend: Backend,
                  cache_dir: str | os.PathLike | None = None,
                  min_terms: int | None = None) -> SeparableSum | None:
    """`f`'s SeparableSum over `wrt` (points list `args`), or None when `f` is not a sum of
    at least `min_terms` (default `MIN_TERMS`) small terms over the variables alone, of at
    most `MAX_KINDS` kinds, or when `backend` has no fused sums (they are Numba kernels)."""
    min_terms = MIN_TERMS if min_terms is None else min_terms
    key = (generation(), f, tuple(args), tuple(wrt), backend.name, min_terms)
    if _LAST[0] == key:
        return _LAST[1]
    found = None
    if backend.name == "numba":
        found = _separable(f, args, wrt, cache_dir, min_terms)
    _LAST[:] = [key, found]
    return found


def _separable(f, args, wrt, cache_dir, min_terms) -> SeparableSum | None:
    if f.op != "add" or len(f.args) < min(min_terms, 2):  # not a sum (the cheap answer)
        return None
    terms = split_terms(f)
    if len(terms) < min_terms or len(set(wrt)) != len(wrt) or len(wrt) >= 2**31:
        return None
    position = {v: i for i, v in enumerate(wrt)}
    ids: dict[tuple, int] = {}  # shape key -> kind of term (in order of first use)
    kept: list[Node] = []  # the first term of each shape
    kind_of, arity, flat = [], [], []  # per term; its variables, all terms in a row
    offset = 0.0
    for term in terms:
        if term.op == "const":
            offset += float(term.value)  # no derivatives
            continue
        found = term_shape(term, position)
        if found is None:
            return None
        key, variables = found
        if not variables:  # a constant not folded (a value without derivatives): not here
            return None
        number = ids.setdefault(key, len(ids))
        if number == len(kept):
            kept.append(term)
        kind_of.append(number)
        arity.append(len(variables))
        flat += variables
    groups = _groups(np.asarray(kind_of, np.int64), np.asarray(arity, np.int64),
                     np.asarray(flat, np.int64), len(wrt))
    if groups is None:
        return None  # too many kinds: too many kernels' worth of steps to compile
    orders = []
    for term in kept:
        nodes: list[Node] = []
        term_shape(term, position, nodes)
        orders.append(nodes)
    kinds = []
    for number, parts, rows in groups:
        stand_ins = [symbol(f"_sep[{i}]") for i in range(rows.shape[1])]
        template = _template(orders[number], stand_ins)
        if parts:
            template = _intern("add", (template, *[_template(orders[k], [stand_ins[slot]])
                                                   for k, slot in parts]), None)
        kinds.append(_Kind(template, stand_ins, rows))
    if not kinds:
        return None
    arg_position = {a: i for i, a in enumerate(args)}
    columns = np.asarray([arg_position[v] for v in wrt], dtype=np.int64)
    same = len(args) == len(wrt) and bool((columns == np.arange(len(wrt))).all())
    return SeparableSum(kinds, len(wrt), None if same else columns, cache_dir, offset,
                        len(args))
