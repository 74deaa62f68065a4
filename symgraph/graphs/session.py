"""Run a static graph: a Session compiles each distinct fetch list once and calls it.

The kernel for a fetch list takes ``[state..., fed placeholders...]`` (state: the variables the
fetches read or the train ops update) and returns ``[fetched values..., new state...]``, so a
train op's forward pass, gradient and update are one call. All fetched values see the state
from before the update (the loss TensorFlow prints is the loss before the step).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..api import CompiledFunction
from ..api import compile as compile_kernel
from ..frontends.values import real_array
from ..ir.evaluate import free_symbols
from ..ir.node import Node
from . import batch
from .batch_run import RowKernels, finish
from .static_graph import (
    Graph,
    GraphError,
    Initializer,
    Placeholder,
    TrainOp,
    Variable,
    get_default_graph,
)
from .tensor import Tensor

__all__ = ["Session"]


class _Plan:
    """One compiled kernel for one fetch list, and where each value goes in and comes out.

    With batched placeholders (graphs.batch) there are more kernels, all compiled once for
    any number of rows: one pass over the rows per level of reductions (their symbols are
    inputs of the later kernels, with the number of rows), the kernel of the unbatched
    values, and one for per-row fetches (graphs.batch_run)."""

    def __init__(self, fetches: list, graph: Graph, backend: str, cache_dir) -> None:
        self.fetches = fetches  # keeps the fetched objects alive while their ids are the key
        for f in fetches:
            if not isinstance(f, (Tensor, TrainOp, Initializer)):
                raise GraphError(f"cannot fetch {f!r}: fetch tensors, train ops or an "
                                 "initializer (one level of lists at most)")
        self.initializes = any(isinstance(f, Initializer) for f in fetches)
        outputs: list[Node] = []
        row_outputs: list[Node] = []
        self.slices: list[tuple[bool, int, int, tuple[int, ...]] | None] = []
        self.writes: list[tuple[Variable, int, int]] = []
        for f in fetches:
            if isinstance(f, Tensor):
                into = row_outputs if f.batched else outputs
                self.slices.append((f.batched, len(into), len(into) + f.size, f.shape))
                into.extend(f.nodes.flat)
            else:
                self.slices.append(None)
        for op in (f for f in fetches if isinstance(f, TrainOp)):
            for v, new in op.updates:
                if any(v is w for w, _, _ in self.writes):
                    raise GraphError(f"variable {v.name!r} is updated twice in one run")
                self.writes.append((v, len(outputs), len(outputs) + v.size))
                outputs.extend(new.nodes.flat)
        self.reductions = batch.reductions_under(outputs + row_outputs)
        reduced = {r.symbol for r in self.reductions} | {batch.ROWS}
        owners: dict[int, Tensor] = {}
        for s in free_symbols(outputs + row_outputs + [r.row for r in self.reductions]):
            if s in reduced:
                continue
            owner = graph.owner.get(s)
            if owner is None:
                raise GraphError(f"the fetches depend on {s.value!r}, which is neither a "
                                 "placeholder nor a variable of the session's graph")
            owners[id(owner)] = owner
        self.float32 = any(getattr(o, "dtype", None) is not None and o.dtype.name == "float32"
                           for o in owners.values())
        written = {id(v) for v, _, _ in self.writes}
        state = [v for v in graph.variables if id(v) in owners or id(v) in written]
        feeds = [p for p in graph.placeholders if id(p) in owners and not p.batched]
        self.row_feeds = [p for p in graph.placeholders if id(p) in owners and p.batched]
        args, self.inputs = [], []  # inputs: (tensor, start, stop) in the kernel's input vector
        for t in state + feeds:
            self.inputs.append((t, len(args), len(args) + t.size))
            args.extend(t.nodes.flat)
        self.batched = bool(self.reductions or row_outputs or self.row_feeds)
        if self.batched:
            args += [batch.ROWS] + [r.symbol for r in self.reductions]
        self.size = len(args)
        backend = "python" if self.float32 else backend  # NumPy's float32 steps (dtypes.py)
        self.kernel: CompiledFunction | None = None
        if outputs:
            self.kernel = compile_kernel(outputs, args, wrt=[], backend=backend,
                                         cache_dir=cache_dir)
        self.rows = RowKernels(self, args, row_outputs, backend, cache_dir) \
            if self.batched else None


class Session:
    """Holds the variables' values; `run` evaluates fetches with one kernel call each time."""

    def __init__(self, graph: Graph | None = None, backend: str = "numba",
                 cache_dir: str | os.PathLike | None = None) -> None:
        self.graph = graph or get_default_graph()
        self.backend, self.cache_dir = backend, cache_dir
        self._values: dict[int, np.ndarray] = {}  # id(variable) -> value, once it changed
        self._plans: dict[tuple[int, ...], _Plan] = {}
        self._known: dict[Any, Placeholder] = {}
        self.kernel_calls = 0

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._plans.clear()

    @property
    def compiled_kernels(self) -> int:
        """How many kernels this session compiled: one per distinct fetch list."""
        return sum(plan.kernel is not None for plan in self._plans.values())

    def value(self, v: Variable) -> np.ndarray:
        """The current value of a variable (its initial value until a step changes it)."""
        return self._values.get(id(v), v.initial).copy()

    def assign(self, v: Variable, value: Any) -> None:
        """Set a variable's value in this session (TF's ``v.load(value, sess)``)."""
        if not isinstance(v, Variable) or v not in self.graph.variables:
            raise GraphError(f"{v!r} is not a variable of this session's graph")
        array = np.array(real_array(value, f"the value assigned to {v.name!r}"))
        if array.shape != v.shape:
            raise GraphError(f"shape mismatch: variable {v.name!r} has shape {v.shape}, "
                             f"assigned a value of shape {array.shape}")
        self._values[id(v)] = array

    def run(self, fetches: Any, feed_dict: dict | None = None) -> Any:
        """Values of `fetches`: one fetch, or a list of them (a list inside too, as from
        `gradients`). Tensors give arrays (a 0-d float64 for a scalar); a TrainOp takes its
        step and gives None; an initializer resets the variables first."""
        single = not isinstance(fetches, (list, tuple))
        flat, layout = [], []
        for item in [fetches] if single else fetches:
            if isinstance(item, (list, tuple)):
                layout.append(len(item))
                flat.extend(item)
            else:
                layout.append(None)
                flat.append(item)
        key = tuple(map(id, flat))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _Plan(flat, self.graph, self.backend, self.cache_dir)
        results = self._execute(plan, self._check_feed(feed_dict or {}))
        out, position = [], 0
        for size in layout:
            out.append(results[position] if size is None else results[position:position + size])
            position += 1 if size is None else size
        return out[0] if single else out

    def _check_feed(self, feed_dict: dict) -> dict[int, np.ndarray]:
        if len(self._known) != 2 * len(self.graph.placeholders):  # the graph grew
            self._known = {k: p for p in self.graph.placeholders for k in (id(p), p.name)}
        fed: dict[int, np.ndarray] = {}
        for key, value in feed_dict.items():
            p = self._known.get(key if isinstance(key, str) else id(key))
            if p is None or (p is not key and not isinstance(key, str)):
                raise GraphError(f"feed_dict key {key!r} is not a placeholder of this graph")
            array = real_array(value, f"feed_dict[{p.name!r}]")
            if p.batched:
                if not p.unknown and (array.ndim != p.ndim + 1 or array.shape[1:] != p.shape):
                    raise GraphError(f"shape mismatch: placeholder {p.name!r} has shape "
                                     f"{(None, *p.shape)}, fed a value of shape {array.shape}")
            elif array.shape != p.shape:
                raise GraphError(f"shape mismatch: placeholder {p.name!r} has shape {p.shape}, "
                                 f"fed a value of shape {array.shape}")
            fed[id(p)] = array
        return fed

    def _execute(self, plan: _Plan, fed: dict[int, np.ndarray]) -> list:
        if plan.initializes:
            self._values.clear()
        if plan.kernel is None and plan.rows is None:
            return [None] * len(plan.slices)
        point = np.zeros(plan.size)
        for t, start, stop in plan.inputs:
            if isinstance(t, Variable):
                point[start:stop] = self._values.get(id(t), t.initial).ravel()
            elif id(t) in fed:
                point[start:stop] = fed[id(t)].ravel()
            else:
                missing = [p.name for p, _, _ in plan.inputs
                           if isinstance(p, Placeholder) and id(p) not in fed]
                raise GraphError(f"placeholder(s) {missing} need a value: add them to feed_dict")
        rows = plan.rows.run(point, fed) if plan.rows is not None else None
        out = None
        if plan.kernel is not None:
            if plan.float32:  # NumPy's batch kernel on float32 operands: float32 steps
                out = np.empty((1, len(plan.kernel.outputs)))
                batch = plan.kernel.kernels("value")[1]
                # (unchecked: the checked kernel takes float64 only; this is the NumPy one)
                getattr(batch, "unchecked", batch)(point.astype(np.float32)[None, :], out)
                out = out[0]
            else:
                out = plan.kernel(point)  # the one kernel call: fetches and new state together
            self.kernel_calls += 1
        for v, start, stop in plan.writes:
            self._values[id(v)] = out[start:stop].reshape(v.shape)
        return [None if s is None else finish(plan, rows if s[0] else out, s) for s in plan.slices]
