"""From expressions to programs: differentiate, then schedule each kernel (value, value and
gradient, ...) as a straight-line Program the backends render."""

from __future__ import annotations

from collections.abc import Sequence

from ..ad.differentiate import hessian, jacobian
from ..ir.node import Node
from ..ir.printer import to_text
from . import naming
from .schedule import Program, schedule

_DESCRIBE_MAX_CHARS = 400


def describe(outputs: Sequence[Node], labels: Sequence[str]) -> list[str]:
    """``label = formula`` lines for a generated module's docstring (short formulas only)."""
    lines = []
    for label, node in zip(labels, outputs):
        try:
            text = to_text(node, max_length=_DESCRIBE_MAX_CHARS)
        except ValueError:
            text = None
        lines.append(f"{label} = {text}" if text else f"{label} = (an expression too large "
                     "to show; see the steps below)")
    return lines


def build_programs(outputs: Sequence[Node], inputs: Sequence[Node], wrt: Sequence[Node],
                   scalar: bool, with_hessian: bool, with_derivatives: bool = True
                   ) -> list[Program]:
    """The kernels of a compiled function: value, and value with derivatives w.r.t. `wrt`."""
    idents = naming.input_identifiers([s.value for s in inputs])
    ident_of = {id(s): i for s, i in zip(inputs, idents)}
    wrt_idents = [ident_of[id(v)] for v in wrt]
    values = naming.value_labels(len(outputs))
    value_slots = list(zip(values, outputs))
    programs = [schedule("value", value_slots, inputs, idents)]
    if not with_derivatives:
        return programs
    if scalar:
        gradient = jacobian(outputs, wrt)[0]
        grad_slots = value_slots + list(zip(naming.gradient_labels(wrt_idents), gradient))
        programs.append(schedule("value_grad", grad_slots, inputs, idents))
        if with_hessian:
            second = hessian(outputs[0], wrt)
            labels = naming.hessian_labels(wrt_idents)
            n = len(wrt)
            hess_slots = grad_slots + [(labels[i][j], second[i][j])
                                       for i in range(n) for j in range(n)]
            programs.append(schedule("value_grad_hess", hess_slots, inputs, idents))
    else:
        rows = jacobian(outputs, wrt)
        jac_slots = value_slots + [(label, d) for v, row in zip(values, rows)
                                   for label, d in zip(naming.gradient_labels(wrt_idents, v), row)]
        programs.append(schedule("value_jac", jac_slots, inputs, idents))
    return programs
