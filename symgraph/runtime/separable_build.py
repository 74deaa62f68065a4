"""The Build of a large sum of small terms: its value and gradient from the fused kernels.

`sg.compile(f, x)` of Rosenbrock over 10^5 variables used to differentiate the whole sum
symbolically (tens of seconds, then a 10^6-step tape). When `f` is a sum that
runtime.separable takes (the rule the sparse Hessian uses), the value and value+gradient
kernels are its fused ones instead: one loop per kind of term, compiled in a second or less.
`SeparableBuild` stands where `runtime.build.Build` would: the same ``rows``, ``batches`` and
``threaded`` kernels (a batch is a loop over its points), and for everything else a Build has
(the programs, the module and its source, the raw compiled kernels) the symbolic Build, made
by `make` on first use. The numbers equal the symbolic kernels' up to rounding (the terms are
added in another order).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..lower.products import VALUE, VALUE_GRAD, Product
from .batching import rows_per_thread, run_batch
from .build import MadeOnUse
from .separable import SeparableSum

TAKEN = frozenset({VALUE.name, VALUE_GRAD.name})  # the products the fused kernels make


def fused_products(products: Sequence[Product]) -> bool:
    """Whether the fused kernels make every one of `products`."""
    return all(p.name in TAKEN for p in products)


class SeparableBuild(MadeOnUse):
    """``rows[name](x, out)``, ``batches[name](X, OUT)`` (= ``threaded``) of the value and
    value+gradient products from `separable`; the symbolic Build (`make()`) for the rest."""

    made = False  # the symbolic Build's module is not made (unless asked for)
    rows_in_place = False  # the gradient is zeroed in `out` before the point is read

    def __init__(self, separable: SeparableSum, products: Sequence[Product], strategy: str,
                 make: Callable[[], Any]) -> None:
        self.separable, self.products, self.strategy = separable, tuple(products), strategy
        self._make, self._built = make, None
        self.on_switch: list[Callable[[Any], None]] = []  # (never called: the fused stay)
        rows = {VALUE.name: self._value_row, VALUE_GRAD.name: self._value_grad_row}
        self.rows = {p.name: rows[p.name] for p in products}
        self.batches = {name: functools.partial(separable.batch, name) for name in self.rows}
        self.threaded = {name: functools.partial(run_batch, batch,
                                                 min_rows=rows_per_thread(separable.cost))
                         for name, batch in self.batches.items()}

    def width(self, name: str) -> int:
        """Values a point's `name` kernel writes: the value (and the gradient)."""
        return 1 + self.separable.n if name == VALUE_GRAD.name else 1

    def op_counts(self, weighted: bool = False) -> dict[str, int]:
        """Operations a point costs in each kernel: its terms' programs, kind by kind (the
        value's are the value+gradient program's steps the value needs)."""
        return {name: self.separable.op_count(name, weighted) for name in self.rows}

    def _value_row(self, x: np.ndarray, out: np.ndarray) -> None:
        out[0] = self.separable.value(x)

    def _value_grad_row(self, x: np.ndarray, out: np.ndarray) -> None:
        out[0] = self.separable.value_and_grad(x, out[1:])[0]

    def straight(self) -> Any:
        """The symbolic Build's compiled kernels (made now: a 10^5-term sum takes a while)."""
        if self._built is None:
            self._built = self._make()
        return self._built.straight()

    @property
    def programs(self) -> list:
        return self.straight().programs

