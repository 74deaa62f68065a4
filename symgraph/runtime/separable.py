"""Value, gradient, sparse Hessian and H v of large sums of small terms, kind by kind.

Chained, banded and grid energies are sums of many terms, each over a few variables, and
most terms are the same formula on other variables (Rosenbrock's ``100*(x[i+1] - x[i]**2)**2
+ (1 - x[i])**2``; a stencil's ``(u[i+1, j] - u[i, j])**2``). Differentiating the whole sum
symbolically costs seconds of per-node Python work per 10^5 variables, and its program runs
on the tape. Here instead:

1. the sum's terms are read once (`split_terms`) and grouped by their shape: the term with
   its variables numbered in order of first use (`ad.terms.term_shape`), constants by
   identity; when that leaves kinds of few terms each (a likelihood's data, a network's
   coefficients: every term its own numbers), its coefficients and data are lifted instead,
   into a table of each term's numbers beside the table of its variables;
2. each shape becomes a template over stand-in variables (and parameters), differentiated
   once: its value and gradient, and its local Hessian's nonzeros (programs of a few dozen
   steps);
3. one generated module (backends.numba.sums) has the value, value+gradient, sparse Hessian
   and H v kernels: each one loop per kind that reads a term's variables, runs the kind's
   steps and adds the results where they go (the gradient's entries, the pattern's slots; the
   pattern is the union of the local ones, so it is `hessian_sparsity`'s); and batch
   kernels of the value and value+gradient, the same loops with a block of points as SIMD
   lanes (backends.numba.sum_lanes).

`MIN_TERMS` terms make a sum fused for everything; past `FUSED_MIN_OPS` operations,
`FUSED_MIN_TERMS` do (`fused_min_terms`: the batches' reason). Values equal the symbolic
kernels' up to rounding (the terms' contributions are added in another order). Terms with
more than `MAX_TERM_VARIABLES` variables, or with symbols that are not variables (parameters),
leave the sum to the symbolic kernels.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..ad.sparsity import hessian_sparsity
from ..ad.terms import group_terms, split_terms, term_shape, term_template
from ..backends.numba.sum_kinds import SumKind, value_only
from ..backends.numba.sum_lanes import LANES, flag_tests
from ..backends.numba.sums import emit_sum_kernels
from ..backends.registry import BACKENDS, Backend
from ..ir.evaluate import count_ops
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
# A big sum of fewer terms is fused too, for its batches: one loop a kind over the terms, the
# points as lanes (backends.numba.sum_lanes), compiles in a few seconds whatever its size,
# where the symbolic kernels of a sum past ~2,000 operations take 5-40 s to compile as lanes
# or batch on the tape. Chosen, not fitted: below 2,000 operations the symbolic lanes meet the
# targets (every family at ~1,000, benchmarks/results/families_1000.md); at ~3,000 and ~5,000,
# fused against SymEngine on every family it takes, FIT and held out alike, in
# benchmarks/results/fused_3000_5000.md (the lanes were faster still where they fitted the
# compile budget: sums whose terms all read the same few parameters, gauss_loglik@840).
FUSED_MIN_OPS = 2_000
FUSED_MIN_TERMS = 64
TERMS_PER_KIND = 16  # fewer terms a kind on average: constants lifted (`_separable`)


class _Kind:
    """One shape of term: its template's programs, the variables of each of its terms and
    the values of their parameters (lifted constants: `ad.terms.term_shape`)."""

    def __init__(self, template: Node, stand_ins: list[Node], rows: np.ndarray,
                 params: list[Node] | None = None, values: np.ndarray | None = None) -> None:
        self.k, self.params = len(stand_ins), list(params or [])
        self.template = template
        index = rows.astype(np.int32)  # less to read
        # Terms by their variables: a sum's own order is its nodes' digests, and reading and
        # adding in that order would miss the cache at every term.
        order = np.lexsort(index.T[::-1])
        self.index = index[order]
        self.values = None if values is None else np.ascontiguousarray(values[order])
        local_rows, local_cols = hessian_sparsity(template, stand_ins)
        gradient, hess = build_programs([template], stand_ins + self.params, stand_ins,
                                        products=[VALUE_GRAD,
                                                  sparse_hessian_product(len(local_rows))])
        shared = len(self.index) > 1 and bool((self.index == self.index[0]).all())
        self.emitted = SumKind(gradient, hess, list(zip(local_rows.tolist(),
                                                        local_cols.tolist())), self.k, shared)
        g_rows = self.index[:, local_rows].astype(np.int64)
        g_cols = self.index[:, local_cols].astype(np.int64)
        self.pairs = np.maximum(g_rows, g_cols), np.minimum(g_rows, g_cols)  # (terms, pairs)

    @property
    def tables(self) -> list[np.ndarray]:
        """What the kernels read of this kind: its variables' table, its parameters' values."""
        return [self.index] if self.values is None else [self.index, self.values]


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
        self._flagged = bool(flag_tests([kind.emitted for kind in kinds]))
        self._tables = [t for kind in kinds for t in kind.tables]
        self._hess_tables = [t for kind, s in zip(kinds, self._slots) for t in (*kind.tables, s)]
        self._ready: dict[str, object] = {}

    @bulk  # Numba's compile beside millions of live nodes: each collection would take seconds
    def _compile(self, name: str) -> object:
        kernel = getattr(self.module, name)
        tables = self._hess_tables if name == "hessian" else self._tables
        small = [np.zeros((0,) + t.shape[1:], t.dtype) for t in tables]
        if name.endswith("_batch"):
            kernel(*self._scratch(name, np.zeros((0, self.n))), *small)
        else:
            kernel(*[np.zeros(1)] * _SIGNATURES[name], *small)
        self._ready[name] = kernel
        return kernel

    def kernel(self, name: str) -> object:
        """The compiled kernel `name` (value, value_grad, hessian, hessp)."""
        return self._ready.get(name) or self._compile(name)

    def _scratch(self, name: str, X: np.ndarray, OUT: np.ndarray | None = None) -> tuple:
        """A batch kernel's arrays: X (the variables' columns), OUT, a block's rows of the
        variables and of the sums (the gradient's, the value's), its points' flags."""
        rows = self.n + 1 if name == "value_grad_batch" else 1
        if OUT is None:
            OUT = np.zeros((X.shape[0], rows))
        return (X, OUT, np.empty((self.n, LANES)), np.empty((rows, LANES)),
                np.zeros(X.shape[0] if self._flagged else 0, np.bool_))

    def batch(self, name: str, X: np.ndarray, OUT: np.ndarray) -> None:
        """Rows of `X` (points of `size` values) into rows of `OUT`: the sum (`name` "value")
        or the sum and its gradient ("value_grad"), a block of points at a time (their
        lanes: backends.numba.sum_lanes)."""
        X = np.asarray(X)
        rows = 1 + self.n if name == "value_grad" else 1
        if X.ndim != 2 or X.shape[1] != self.size or np.shape(OUT) != (X.shape[0], rows):
            raise ValueError(f"{name}'s batch expects X of shape (N, {self.size}) and OUT of "
                             f"shape (N, {rows}), got {X.shape} and {np.shape(OUT)}")
        X = np.ascontiguousarray(X if self.columns is None else X[:, self.columns],
                                 dtype=np.float64)
        plain = (isinstance(OUT, np.ndarray) and OUT.dtype == np.float64
                 and OUT.flags.c_contiguous and OUT.flags.writeable)
        target = OUT if plain else np.empty((X.shape[0], rows))
        kernel = self.kernel(name + "_batch")
        arrays = self._scratch(name + "_batch", X, target)
        kernel(*arrays, *self._tables)
        for p in np.flatnonzero(arrays[-1]).tolist():  # again with libm: the 1-point kernels
            if name == "value":
                target[p, 0] = self.kernel("value")(X[p], *self._tables)
            else:
                target[p, 1:] = 0.0
                target[p, 0] = self.kernel("value_grad")(X[p], target[p, 1:], *self._tables)
        if self.offset:
            target[:, 0] += self.offset
        if target is not OUT:
            OUT[...] = target

    @property
    def cost(self) -> int:
        """The op-table cost of a point's value and gradient (all the terms')."""
        return self.op_count("value_grad", True)

    def op_count(self, name: str, weighted: bool = False) -> int:
        """Operations (or op-table cost) of a point's `name` ("value" or "value_grad"): each
        kind's program times its terms."""
        total = 0
        for kind in self.kinds:
            p = kind.emitted.gradient
            if name == "value":
                p = value_only(p)
            total += kind.index.shape[0] * (p.cost if weighted else p.op_count)
        return total

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


def fused_min_terms(f: Node) -> int:
    """The fewest terms that `f` fused needs: `FUSED_MIN_TERMS` for a sum of at least
    `FUSED_MIN_OPS` operations, else `MIN_TERMS`."""
    if f.op != "add" or len(f.args) < 2:
        return MIN_TERMS
    terms = len(split_terms(f))
    if terms >= MIN_TERMS or terms < FUSED_MIN_TERMS:
        return MIN_TERMS
    return FUSED_MIN_TERMS if count_ops(f) >= FUSED_MIN_OPS else MIN_TERMS


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
    # Constants by identity first (a chain's terms share theirs: one kind, no tables); unless
    # that leaves kinds of few terms each, coefficients and data lifted into tables (each term
    # its numbers), when that makes fewer kinds.
    best = None
    for lift in (False, True):
        read = _read(terms, position, lift)
        if read is None:
            return None
        groups = group_terms(np.asarray(read[1], np.int64), np.asarray(read[2], np.int64),
                             np.asarray(read[3], np.int64), len(wrt), MAX_KINDS,
                             np.asarray([not v for v in read[5]], bool) if lift else None)
        if groups is not None and (best is None or len(groups) < len(best[2])):
            best = (lift, read, groups)
        if best is not None and len(best[2]) * TERMS_PER_KIND <= len(terms):
            break
    if best is None:
        return None  # too many kinds: too many kernels' worth of steps to compile
    lift, (offset, _, _, _, kept, values), groups = best
    kinds = []
    for number, parts, rows, members in groups:
        nodes: list[Node] = []
        lifted: list[Node] | None = [] if lift else None
        term_shape(kept[number], position, nodes, lifted)
        stand_ins = [symbol(f"_sep[{i}]") for i in range(rows.shape[1])]
        params = [symbol(f"_par[{i}]") for i in range(len(lifted or ()))]
        template = term_template(nodes, stand_ins, dict(zip(lifted or (), params)))
        for k, slot in parts:  # (joined terms have no parameters)
            joined: list[Node] = []
            term_shape(kept[k], position, joined)
            template = _intern("add", (template, term_template(joined, [stand_ins[slot]])),
                               None)
        table = np.asarray([values[t] for t in members.tolist()], np.float64) if params else None
        kinds.append(_Kind(template, stand_ins, rows, params, table))
    if not kinds:
        return None
    arg_position = {a: i for i, a in enumerate(args)}
    columns = np.asarray([arg_position[v] for v in wrt], dtype=np.int64)
    same = len(args) == len(wrt) and bool((columns == np.arange(len(wrt))).all())
    return SeparableSum(kinds, len(wrt), None if same else columns, cache_dir, offset,
                        len(args))


def _read(terms: list[Node], position: dict[Node, int], lift: bool):
    """(the constant terms' sum, per counted term its shape's number, its variables' count,
    all their variables in a row, the first term of each shape, per term its parameters'
    values), or None when a term is not a small term over the variables alone."""
    ids: dict[tuple, int] = {}  # shape key -> kind of term (in order of first use)
    kept: list[Node] = []  # the first term of each shape
    kind_of, arity, flat, values = [], [], [], []  # per term; its variables, all in a row
    offset = 0.0
    for term in terms:
        if term.op == "const":
            offset += float(term.value)  # no derivatives
            continue
        lifted: list[Node] | None = [] if lift else None
        found = term_shape(term, position, None, lifted)
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
        values.append([c.value for c in lifted] if lifted else [])
    return offset, kind_of, arity, flat, kept, values
