"""`backward()` of symgraph.dynamic: compiled once per distinct graph structure, rows as a loop.

Tensors that do not require grad enter the record as *data symbols*, not constants, so the
recorded graph's structure does not depend on the data's values: a training loop records the
same structure at every step (Python numbers stay constants, as ``torch.compile`` specialises
on them). A data tensor of at least `BATCH_ROWS` (32) rows is a batch: its first axis is the batch
axis, recorded as one row of symbols (graphs.batch), and reductions over it (``.mean()``,
``.sum()``) are reduction symbols computed by a loop over the rows.

`backward` canonicalises the recorded graph (every symbol by its order of appearance: leaves in
the order of `wrt`, data by first use) into a digest, and keeps, per digest, the compiled
kernels of the derivatives (runtime.reduction's passes over the rows, then one kernel of the
gradients): a later step with the same structure only feeds the new values. Like
``torch.compile``, the first step of a structure pays the compile, the next ones do not.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..api import compile as compile_kernel
from ..ir.node import Node, apply
from ..ir.ops import OPS
from ..ir.traversal import topological_order
from ..lower.products import VALUE
from ..runtime.reduction import ReducedFunction
from . import batch
from . import tensor as sym

BATCH_ROWS = 32  # a data tensor with this many rows or more is a batch (a loop over rows)
BACKEND = {"name": "numba"}  # the passes over rows; `set_backend` changes it
_counter = itertools.count()
_plans: dict[str, _Plan] = {}
_lock = threading.Lock()


def set_backend(name: str) -> None:
    """The backend of backward's passes over rows ("numba" or "python")."""
    if name not in ("numba", "python"):
        raise ValueError(f"backend must be 'numba' or 'python', got {name!r}")
    BACKEND["name"] = name


def data_graph(value: np.ndarray) -> sym.Tensor:
    """The record of a data tensor: fresh symbols, one row of them for a batch."""
    base = f"_data{next(_counter)}"
    if value.ndim >= 1 and value.shape[0] >= BATCH_ROWS:
        row = sym.symbolic(base, value.shape[1:], op="data")
        batch.row_symbols(row.flat_nodes())
        row.batched = True
        return row
    return sym.symbolic(base, value.shape, op="data")


class _Plan:
    """The compiled kernels for one canonical structure."""

    def __init__(self, derivatives: list[Node], args: list[Node], groups: list[Any],
                 reductions: list[batch.Reduction]) -> None:
        self.size = len(args)
        backend = BACKEND["name"]
        self.rows_at = len(args) - 1 - len(reductions) if reductions or groups else None
        at = {r.symbol: (self.rows_at or 0) + 1 + i for i, r in enumerate(reductions)}
        self.passes = [
            (ReducedFunction([r.row for r in level], args, groups, reduce="sum", wrt=[],
                             backend=backend),
             [(at[r.symbol], r.kind == "mean") for r in level])
            for level in batch.levels(reductions)]
        self.kernel = compile_kernel(derivatives, args, wrt=[], backend="python") \
            if derivatives else None

    def run(self, point: np.ndarray, arrays: list[np.ndarray]) -> np.ndarray:
        if self.rows_at is not None:
            rows = arrays[0].shape[0] if arrays else 0
            point[self.rows_at] = rows
            for fn, places in self.passes:
                p, data = fn.prepare(point, arrays)
                for (k, mean), total in zip(places, fn.sums(VALUE, p, data)):
                    point[k] = total / rows if mean else total
        return self.kernel(point) if self.kernel is not None else np.zeros(0)


def _canonical(roots: list[Node], leaves: list[Node], data: dict[Node, tuple]) -> str:
    """The structure's digest: a hash of every node from its op and its arguments' hashes
    (sorted for a commutative op: interning orders their arguments by name, and data symbols
    are named anew each step), symbols by their role: a leaf by its place in `wrt`, a data
    symbol by `data` (its tensor's place among the inputs, its element, whether a batch)."""
    reductions = batch.reductions_under(roots)
    # Rows innermost first, then the roots: a reduction's row has its hash before any use.
    order = topological_order([r.row for r in reductions] + roots)
    leaf_at = {n: i for i, n in enumerate(leaves)}
    code: dict[Node, str] = {}
    for n in order:
        if n.op == "const":
            item: tuple = ("c", repr(float(n.value)))
        elif n.op == "symbol":
            if n in leaf_at:
                item = ("leaf", leaf_at[n])
            elif n is batch.ROWS:
                item = ("rows",)
            elif (r := batch.reduction_of(n)) is not None:
                item = ("reduce", r.kind, code[r.row])
            else:
                item = ("data", *data[n])
        else:
            args = [code[a] for a in n.args]
            item = (n.op, *(sorted(args) if OPS[n.op].commutative else args))
        code[n] = hashlib.sha256(repr(item).encode()).hexdigest()[:32]
    return hashlib.sha256(repr([code[r] for r in roots]).encode()).hexdigest()


def backward(outputs: Sequence[Node], batched: bool, seed: np.ndarray | None,
             leaves: list[Any], inputs: list[Any]) -> list[np.ndarray]:
    """d(sum of seed * outputs)/d(each leaf), one array per leaf. `inputs` are the data tensors
    the record read (their `_data_graph` symbols, their values)."""
    outputs = list(outputs)
    wrt = [n for leaf in leaves for n in leaf._graph.flat_nodes()]
    seed_graph = None
    if seed is not None:  # the seed is data too: its values are not the structure's
        seed_graph = sym.symbolic(f"_seed{next(_counter)}", seed.shape[1:] if batched
                                  else seed.shape, op="data")
        if batched:
            batch.row_symbols(seed_graph.flat_nodes())
            seed_graph.batched = True
        outputs = [apply("mul", s, o) for s, o in zip(seed_graph.flat_nodes(), outputs)]
    graphs = [(t._data_graph, t._value) for t in inputs]
    if seed_graph is not None:
        graphs.append((seed_graph, seed))
    flags: dict[Node, bool] = {}
    roles: dict[Node, tuple] = {}
    values: dict[Node, Any] = {}
    data_order: list[Node] = []  # by tensor, then element: the canonical order of the inputs
    for k, (g, value) in enumerate(graphs):
        for j, n in enumerate(g.flat_nodes()):
            flags[n], roles[n] = g.batched, (k, j, g.batched, g.shape)
            data_order.append(n)
        values.update(_values_of(g, value))
    digest = _canonical(outputs, wrt, roles)
    with _lock:
        plan = _plans.get(digest)
    if plan is None:
        derivatives = batch.gradients(outputs, [batched] * len(outputs), wrt)
        reductions = batch.reductions_under(derivatives)  # d/dw of a reduction: another
        plain = [n for n in data_order if not flags.get(n)]
        # a batch tensor is one data array of the kernel (its rows read where they are: a
        # column each would be a copy of each column, a fifth of the MLP's step at 10^6 rows)
        rows = [list(g.flat_nodes()) for g, _ in graphs if g.batched]
        args = wrt + plain + ([batch.ROWS] + [r.symbol for r in reductions] if rows else [])
        plan = _Plan(derivatives, args, rows, reductions)
        with _lock:
            _plans[digest] = plan
    point = np.zeros(plan.size)
    point[:len(wrt)] = [v for leaf in leaves for v in leaf._value.ravel()]
    k = len(wrt)
    for n in data_order:
        if not flags.get(n):
            point[k] = values[n]
            k += 1
    arrays = [value.reshape(value.shape[0], -1) for g, value in graphs if g.batched]
    flat = plan.run(point, arrays)
    result, start = [], 0
    for leaf in leaves:
        result.append(np.array(flat[start:start + leaf.size]).reshape(leaf.shape))
        start += leaf.size
    return result


def _values_of(g: sym.Tensor, value: np.ndarray) -> dict[Node, Any]:
    """Each symbol's value: a number, or for a batch's row symbols their column of rows."""
    if g.batched:
        rows = value.reshape(value.shape[0], -1)
        return {n: rows[:, j] for j, n in enumerate(g.flat_nodes())}
    return dict(zip(g.flat_nodes(), value.ravel().tolist()))


def compiled_structures() -> int:
    """How many distinct graph structures backward has compiled (in this process)."""
    return len(_plans)
