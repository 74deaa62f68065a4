"""Running a session's plan whose fetches read batched placeholders (graphs.batch).

The kernels are runtime.reduction's, compiled once per fetch list: one pass over the fed rows
per level of reductions (each pass sums the rows of its reductions; a mean is then divided by
the number of rows), and a per-row kernel for fetches that have a value per row. Every kernel
takes the plan's whole input vector as its parameters: the state, the unbatched feeds, the
number of rows and the reductions' values, filled in as the passes compute them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..lower.products import VALUE
from ..runtime.reduction import ReducedFunction
from . import batch


class RowKernels:
    """The passes over the rows, and the per-row kernel, of one plan."""

    def __init__(self, plan: Any, args: list, row_outputs: list, backend: str,
                 cache_dir: Any) -> None:
        self.plan = plan
        self.rows_at = args.index(batch.ROWS)
        self.feeds = plan.row_feeds
        data = [p.nodes.flat[0] if p.shape == () else p.nodes for p in self.feeds]
        dtype = np.float32 if plan.float32 else np.float64
        at = {r.symbol: self.rows_at + 1 + i for i, r in enumerate(plan.reductions)}
        self.passes = []
        for level in batch.levels(plan.reductions):
            fn = ReducedFunction([r.row for r in level], args, data, reduce="sum", wrt=[],
                                 backend=backend, cache_dir=cache_dir, dtype=dtype)
            self.passes.append((fn, [(at[r.symbol], r.kind == "mean") for r in level]))
        self.per_row = ReducedFunction(row_outputs, args, data, reduce=None, wrt=[],
                                       backend=backend, cache_dir=cache_dir, dtype=dtype) \
            if row_outputs else None
        self.fed_shape: tuple[int, ...] | None = None

    def run(self, point: np.ndarray, fed: dict[int, np.ndarray]) -> np.ndarray | None:
        """Fill the number of rows and the reductions into `point`; the per-row outputs."""
        from .static_graph import GraphError

        missing = [p.name for p in self.feeds if id(p) not in fed]
        if missing:
            raise GraphError(f"placeholder(s) {missing} need a value: add them to feed_dict")
        arrays = [fed[id(p)].reshape(-1) if p.unknown else fed[id(p)] for p in self.feeds]
        counts = {p.name: a.shape[0] for p, a in zip(self.feeds, arrays)}
        if len(set(counts.values())) > 1:
            raise GraphError(f"the batched placeholders were fed different numbers of rows: "
                             f"{counts}")
        rows = arrays[0].shape[0] if arrays else 0
        shapes = {fed[id(p)].shape for p in self.feeds if p.unknown}
        self.fed_shape = shapes.pop() if len(shapes) == 1 and all(
            p.unknown for p in self.feeds) else (rows,)
        point[self.rows_at] = rows
        for fn, places in self.passes:
            p, data = fn.prepare(point, arrays)
            sums = fn.sums(VALUE, p, data)
            for (k, mean), total in zip(places, sums):
                point[k] = total / rows if mean else total  # nan for a mean of no rows
        if self.per_row is None:
            return None
        return self.per_row._reduced(VALUE, point, arrays)


def finish(plan: Any, values: np.ndarray, where: tuple) -> Any:
    """A fetched tensor's value from the kernel's outputs: float32 for a float32 graph, a
    scalar (NumPy's) for a 0-d tensor, per row shaped like the rows fed."""
    batched, start, stop, shape = where
    if batched:
        rows = plan.rows.fed_shape
        value = values[:, start:stop].reshape(tuple(rows) + tuple(shape))
    else:
        value = values[start:stop].reshape(shape)
    if plan.float32:
        value = value.astype(np.float32)
    return value[()]
