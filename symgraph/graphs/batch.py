"""The batch axis of static graphs as a loop: reductions over rows, and derivatives through them.

A placeholder with a ``None`` first dimension (or no shape at all) is one row of symbols
(`row_symbols` registers them); tensors computed from it are batched (graphs.tensor). Reducing
a batched tensor over its rows makes a *reduction symbol*: a fresh symbol standing for
``sum`` or ``mean`` over the rows of a row expression (`Reduction`), which later nodes use
like any other number. Session (graphs.session, graphs.batch_run) computes every reduction
symbol a fetch needs in one pass over the fed rows per level of nesting
(runtime.reduction's kernels: compiled once, whatever the number of rows).

Derivatives go through reduction symbols by the chain rule (`gradients`): for a reduction R of
row r, ``dL/dv = dL/dv|direct + dL/dR * reduce(dr/dv)``, the last a reduction symbol too, and
``dL/dx_i = dL/dR * dr/dx (row i)`` (divided by the number of rows for a mean: the symbol
`ROWS`, fed by the session) for a batched placeholder x. Reductions are processed outermost
first, so nested ones (``mean(x - mean(x))``) work too.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..ad.differentiate import vjp
from ..ir.evaluate import free_symbols
from ..ir.node import Node, apply, const, symbol
from ..ir.traversal import topological_order
from . import tensor
from .tensor import ShapeError, Tensor, stack_nodes

ROWS = symbol("_batch_rows")  # the number of fed rows (the session feeds it)


@dataclass(frozen=True)
class Reduction:
    """`symbol` stands for the `kind` ("sum" or "mean") over the rows of `row`."""

    symbol: Node
    row: Node
    kind: str


_lock = threading.Lock()
_reductions: dict[Node, Reduction] = {}  # reduction symbol -> its record
_by_row: dict[tuple[Node, str], Node] = {}  # (row, kind) -> its symbol: one symbol each
_row_symbols: set[Node] = set()


def row_symbols(nodes: Sequence[Node]) -> None:
    """Mark `nodes` as the symbols of one row of a batched placeholder."""
    with _lock:
        _row_symbols.update(nodes)


def is_row_symbol(node: Node) -> bool:
    return node in _row_symbols


def reduction_of(node: Node) -> Reduction | None:
    """The record of a reduction symbol (None for any other node)."""
    return _reductions.get(node)


def reduce_rows(row: Node, kind: str) -> Node:
    """The node for `kind` of `row` over the rows: a reduction symbol, or (for a row that
    does not depend on the row's symbols) the row itself for a mean, ROWS times it for a sum."""
    if not any(s in _row_symbols for s in free_symbols([row])):
        if row.op == "const" and row.value == 0.0:
            return row
        return row if kind == "mean" else apply("mul", ROWS, row)
    with _lock:
        known = _by_row.get((row, kind))
        if known is None:
            known = symbol(f"_batch_{kind}_{len(_reductions)}")
            _reductions[known] = Reduction(known, row, kind)
            _by_row[(row, kind)] = known
        return known


def reductions_under(nodes: Sequence[Node]) -> list[Reduction]:
    """Every reduction `nodes` need, also through other reductions' rows; innermost first
    (a reduction after every one its row uses)."""
    found: dict[Node, Reduction] = {}
    stack = [s for s in free_symbols(list(nodes)) if s in _reductions]
    while stack:
        s = stack.pop()
        if s in found:
            continue
        found[s] = _reductions[s]
        stack.extend(t for t in free_symbols([found[s].row]) if t in _reductions)
    level: dict[Node, int] = {}
    pending = sorted(found, key=lambda s: s.value)
    while pending:  # iterative: a reduction's level is one more than its inner ones'
        later = []
        for s in pending:
            inner = [t for t in free_symbols([found[s].row]) if t in _reductions]
            if all(t in level for t in inner):
                level[s] = 1 + max((level[t] for t in inner), default=-1)
            else:
                later.append(s)
        if len(later) == len(pending):
            raise AssertionError("reductions that use each other")
        pending = later
    return [found[s] for s in sorted(found, key=lambda s: (level[s], s.value))]


def levels(reductions: Sequence[Reduction]) -> list[list[Reduction]]:
    """`reductions` (innermost first) grouped into passes: each pass needs only earlier ones."""
    passes: list[list[Reduction]] = []
    for r in reductions:
        inner = {t for t in free_symbols([r.row]) if t in _reductions}
        if not passes or inner & {q.symbol for q in passes[-1]}:
            passes.append([])
        passes[-1].append(r)
    return passes


def _add(terms: list[Node]) -> Node:
    return apply("add", *terms) if len(terms) > 1 else terms[0] if terms else const(0.0)


def gradients(outputs: Sequence[Node], batched: Sequence[bool], wrt: Sequence[Node]
              ) -> list[Node]:
    """d(sum of `outputs`)/d(each of `wrt`), through reduction symbols. A batched output is a
    row expression (its sum is over the rows too); a `wrt` that is a row symbol gets a row
    expression (its derivative at each row), any other an unbatched node."""
    wrt = list(wrt)
    rows = [is_row_symbol(w) for w in wrt]
    found = reductions_under(list(outputs))
    symbols = [r.symbol for r in found]
    targets = wrt + symbols
    adjoints: dict[Node, list[Node]] = {s: [] for s in symbols}
    result: list[list[Node]] = [[] for _ in wrt]

    def collect(derivatives: list[Node], scale: Node | None, kind: str | None) -> None:
        """Add `derivatives` (of a row, if `kind`, reduced by it; times `scale`)."""
        for j, d in enumerate(derivatives):
            if d.op == "const" and d.value == 0.0:
                continue
            if j < len(wrt) and rows[j]:
                term = d if kind is None or kind == "sum" else apply("div", d, ROWS)
            else:
                term = d if kind is None else reduce_rows(d, kind)
            term = term if scale is None else apply("mul", scale, term)
            (result[j] if j < len(wrt) else adjoints[symbols[j - len(wrt)]]).append(term)

    plain = [o for o, b in zip(outputs, batched) if not b]
    per_row = [o for o, b in zip(outputs, batched) if b]
    if plain:
        collect(vjp(plain, [1.0] * len(plain), targets), None, None)
    if per_row:
        collect(vjp(per_row, [1.0] * len(per_row), targets), None, "sum")
    for r in reversed(found):  # outermost first: every use of r is collected before it
        if not adjoints[r.symbol]:
            continue
        inner = [t for t in free_symbols([r.row]) if t in _reductions]
        derivatives = vjp([r.row], [1.0], wrt + inner)
        scaled = _add(adjoints[r.symbol])
        # Inner reductions' adjoints are collected like the outputs' (same index layout).
        padded = derivatives[:len(wrt)] + [const(0.0)] * len(symbols)
        for t, d in zip(inner, derivatives[len(wrt):]):
            padded[len(wrt) + symbols.index(t)] = d
        collect(padded, scaled, r.kind)
    return [_add(terms) for terms in result]


def depends_on_rows(nodes: Sequence[Node]) -> bool:
    """Whether any of `nodes` reads a row symbol directly (a row expression)."""
    return any(n.op == "symbol" and n in _row_symbols for n in topological_order(list(nodes)))


def reduce_tensor(t: Tensor, axis: Any, kind: str) -> Tensor:
    """TF's reduce_sum/mean (`axis`: None, an int or a list; torch's `dim` alike); over a
    batched tensor's rows, reduction symbols (`reduce_rows`)."""
    within = tensor.reduce_mean if kind == "mean" else tensor.reduce_sum
    if not t.batched:
        if isinstance(axis, (list, tuple)):
            for k in sorted((a % t.ndim for a in axis), reverse=True):
                t = within(t, k)
            return t
        return within(t, axis)
    rank = t.ndim + 1  # the full shape: (None, *row)
    axes = list(range(rank)) if axis is None else list(axis) if isinstance(
        axis, (list, tuple)) else [axis]
    if any(not -rank <= a < rank for a in axes):
        raise ShapeError(f"axis {axis} is out of range for a tensor of shape "
                         f"{(None, *t.shape)}")
    axes = sorted({a % rank for a in axes})
    row = Tensor(t.nodes, t.op, t.name)
    for k in reversed([a - 1 for a in axes if a > 0]):  # within each row first
        row = within(row, k)
    if 0 not in axes:
        row.batched = True
        return row
    # Over the rows: one reduction symbol per element left.
    return stack_nodes([reduce_rows(n, kind) for n in row.nodes.flat], row.shape,
                       f"reduce_{kind}")
