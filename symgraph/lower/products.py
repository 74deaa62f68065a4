"""The derivative products a compiled function can ask for, one record each.

A `Product` says how one kernel program is made: its name, the output slots it fills (labels
and nodes, built from the outputs and `wrt` by the differentiator) and where its own part sits
in the program's output row. `build_programs` schedules one program per product asked for, so
a new product (HVP, JVP, sparse values) is one more record: the API, the expression cache, the
CLI and Dask go through the list.

Every product's row starts with the values: one fused kernel computes the value and its
derivatives, sharing the forward subexpressions. Derivatives are computed once per build
(`Derivatives`), however many products use them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from ..ad.differentiate import hessian, jacobian
from ..ir.node import Node
from ..ir.opspec import generation
from . import naming

Slots = list[tuple[str, Node]]
_RECENT_JACOBIANS: dict[tuple, list[list[Node]]] = {}  # the last few, by (outputs, wrt)
_RECENT_MAX = 2


def shared_jacobian(outputs: Sequence[Node], wrt: Sequence[Node]) -> list[list[Node]]:
    """`jacobian(outputs, wrt)`, kept for the next few builds of the same expression: a
    function's value+gradient, sparse Hessian and hessp kernels are built one after another,
    and at 10^5 variables one reverse sweep costs seconds. Nodes are interned, so the nodes
    are the ones a new sweep would make."""
    key = (generation(), tuple(outputs), tuple(wrt))  # a redefined op: differentiate anew
    found = _RECENT_JACOBIANS.get(key)
    if found is None:
        found = jacobian(list(outputs), list(wrt))
        if len(_RECENT_JACOBIANS) >= _RECENT_MAX:
            del _RECENT_JACOBIANS[next(iter(_RECENT_JACOBIANS))]
        _RECENT_JACOBIANS[key] = found
    return [list(row) for row in found]


class Derivatives:
    """What products are built from: the outputs, their labels, the identifiers of `wrt`, and
    the derivatives, each computed on first use and then shared."""

    def __init__(self, outputs: Sequence[Node], inputs: Sequence[Node], wrt: Sequence[Node]
                 ) -> None:
        self.outputs, self.inputs, self.wrt = list(outputs), list(inputs), list(wrt)
        self.idents = naming.input_identifiers([s.value for s in inputs])
        ident_of = {id(s): i for s, i in zip(inputs, self.idents)}
        self.wrt_idents = [ident_of[id(v)] for v in wrt]
        self.labels = naming.value_labels(len(outputs))

    @cached_property
    def value_slots(self) -> Slots:
        return list(zip(self.labels, self.outputs))

    @cached_property
    def jacobian(self) -> list[list[Node]]:
        return shared_jacobian(self.outputs, self.wrt)

    @cached_property
    def gradient_slots(self) -> Slots:
        """``df_dx...`` of a scalar expression."""
        return list(zip(naming.gradient_labels(self.wrt_idents), self.jacobian[0]))

    @cached_property
    def hessian_slots(self) -> Slots:
        """``d2f_dx_dy...`` of a scalar expression, row by row."""
        second = hessian(self.outputs[0], self.wrt)
        labels = naming.hessian_labels(self.wrt_idents)
        n = len(self.wrt)
        return [(labels[i][j], second[i][j]) for i in range(n) for j in range(n)]

    @cached_property
    def jacobian_slots(self) -> Slots:
        """``df0_dx...`` of a vector of expressions, output by output."""
        return [(label, d) for v, row in zip(self.labels, self.jacobian)
                for label, d in zip(naming.gradient_labels(self.wrt_idents, v), row)]


@dataclass(frozen=True)
class Product:
    """One kernel program: `name`, its output slots after the values (`slots`), and its part
    of the row: ``part(m, k)`` is (first column, shape) for m outputs and k variables."""

    name: str
    slots: Callable[[Derivatives], Slots]
    part: Callable[[int, int], tuple[int, tuple[int, ...]]]
    scalar_only: bool = False  # a gradient or Hessian: of one expression
    about: str = ""  # what it computes, for messages and docs

    def width(self, m: int, k: int) -> int:
        """Output slots of the program: values, then the product's part."""
        start, shape = self.part(m, k)
        size = 1
        for n in shape:
            size *= n
        return start + size


VALUE = Product("value", lambda d: [], lambda m, k: (0, (m,)), about="the values")
VALUE_GRAD = Product("value_grad", lambda d: d.gradient_slots, lambda m, k: (1, (k,)),
                     scalar_only=True, about="value and gradient")
VALUE_GRAD_HESS = Product("value_grad_hess", lambda d: d.gradient_slots + d.hessian_slots,
                          lambda m, k: (1 + k, (k, k)), scalar_only=True,
                          about="value, gradient and Hessian")
VALUE_JAC = Product("value_jac", lambda d: d.jacobian_slots, lambda m, k: (m, (m, k)),
                    about="values and Jacobian")
PRODUCTS = {p.name: p for p in (VALUE, VALUE_GRAD, VALUE_GRAD_HESS, VALUE_JAC)}


def products_for(scalar: bool, hessian: bool = False, derivatives: bool = True
                 ) -> list[Product]:
    """The products `compile` makes: the values; with derivatives, value and gradient (and the
    Hessian, if asked) of a scalar expression, values and Jacobian of a vector of them."""
    if not derivatives:
        return [VALUE]
    if not scalar:
        return [VALUE, VALUE_JAC]
    return [VALUE, VALUE_GRAD, VALUE_GRAD_HESS] if hessian else [VALUE, VALUE_GRAD]
