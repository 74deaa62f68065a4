"""Programs for a batch axis that is a loop: an expression written for one row of data, whose
reduction over rows (and the reduction's derivatives w.r.t. the parameters) a kernel computes
in one pass.

The row's inputs are the parameters, then the data symbols of one row, group by group (a data
group is one array argument of the compiled function: a scalar per row, or a row of several
columns). Derivatives are taken w.r.t. parameters only, and sums are linear, so the reduced
gradient and Hessian are the sums of the rows' own: the products' programs are the ordinary
row programs (`build_programs`), and the kernel accumulates their output slots. Nothing here
depends on the number of rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..ir.node import Node
from .products import Product
from .programs import build_programs
from .schedule import Program


@dataclass(frozen=True)
class RowLayout:
    """Where a row program's inputs come from: `n_params` from the parameter vector, then one
    group per data argument, `widths[g]` columns each (a scalar per row is width 1)."""

    n_params: int
    widths: tuple[int, ...]

    @property
    def n_data(self) -> int:
        return len(self.widths)

    def columns(self) -> list[tuple[int, int]]:
        """(group, column) of each data input, in the program's input order."""
        return [(g, c) for g, w in enumerate(self.widths) for c in range(w)]


def reduce_programs(outputs: Sequence[Node], params: Sequence[Node],
                    data: Sequence[Sequence[Node]], wrt: Sequence[Node],
                    products: Sequence[Product]) -> tuple[list[Program], RowLayout]:
    """The row programs of `products` over inputs ``params + data`` (derivatives w.r.t.
    `wrt`, a subset of the parameters), and their layout."""
    inputs = [*params, *(s for group in data for s in group)]
    programs = build_programs(outputs, inputs, wrt, products=products)
    return programs, RowLayout(len(params), tuple(len(g) for g in data))
