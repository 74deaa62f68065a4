"""Schedule: output nodes -> one flat straight-line program the emitters can print.

Each distinct subexpression becomes one step, computed once, after its arguments; nodes no
output needs are never reached. Temporaries are named ``t0, t1, ...`` in order of first use, and
a step whose value is an output is named after the output (``df_dx``), so programs read well and
are identical in every process. Wide sums and products are split into chained steps of at most
`MAX_WIDTH` operands: never one giant expression, which CPython and LLVM handle badly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..ir.node import Node
from ..ir.ops import OPS, _int_exponent
from ..ir.printer import to_text
from ..ir.traversal import bulk, capped_tree_sizes, topological_order

MAX_WIDTH = 16
COMMENT_MAX_NODES = 8  # a step's comment shows its expression when the tree is this small


class Step(NamedTuple):  # a tuple: 10^5-step programs are built and read in bulk
    target: str
    op: str
    operands: tuple[str, ...]  # identifiers or float literals
    comment: str = ""


@dataclass(frozen=True)
class Program:
    """A straight-line kernel: inputs, steps, then output slots in order."""

    name: str
    inputs: tuple[str, ...]
    steps: tuple[Step, ...]
    outputs: tuple[tuple[str, str], ...]  # (label, operand)

    @property
    def op_count(self) -> int:
        """Arithmetic operations: a k-operand sum or product counts k - 1, any other step 1."""
        return sum(max(1, len(s.operands) - 1) if s.op in ("add", "mul") else 1
                   for s in self.steps)

    @property
    def cost(self) -> int:
        """Operations weighted by the op table's `cost` (a transcendental call counts ~8)."""
        total = 0
        for s in self.steps:
            if s.op in ("add", "mul"):
                total += max(1, len(s.operands) - 1)
            elif s.op == "pow" and _int_exponent(s.operands[1]) is not None:
                total += max(1, abs(_int_exponent(s.operands[1])) - 1)  # emitted as products
            else:
                total += OPS[s.op].cost
        return total


def literal(value: float) -> str:
    """Python source for a float constant, valid in every backend."""
    if math.isnan(value):
        return "math.nan"
    if math.isinf(value):
        return "math.inf" if value > 0 else "-math.inf"
    return repr(float(value))


def _negations_feeding_only_sums(order: list[Node], claimed: dict[Node, str]) -> set[Node]:
    """Negations whose every use is a sum: they print as subtraction, with no step of their own."""
    only_sums: dict[Node, bool] = {}
    for node in order:
        for arg in node.args:
            if arg.op == "neg":
                only_sums[arg] = only_sums.get(arg, True) and node.op == "add"
    return {node for node, ok in only_sums.items() if ok and node not in claimed}


@bulk
def schedule(name: str, outputs: Sequence[tuple[str, Node]], inputs: Sequence[Node],
             input_names: Sequence[str], comments: bool = True) -> Program:
    """Flatten the DAG under `outputs` into a Program over the given input symbols."""
    operand: dict[Node, str] = dict(zip(inputs, input_names, strict=True))
    claimed: dict[Node, str] = {}
    for label, node in outputs:
        if node.args and node not in claimed:
            claimed[node] = label
    order = topological_order([node for _, node in outputs])
    sizes = capped_tree_sizes(order, COMMENT_MAX_NODES + 1) if comments else {}
    inlined = _negations_feeding_only_sums(order, claimed)
    steps: list[Step] = []
    counter = 0
    for node in order:
        op = node.op
        if op == "const":
            operand[node] = literal(node.value)
            continue
        if op == "symbol":
            if node not in operand:
                raise ValueError(f"the expression depends on {node.value!r}, which is not "
                                 "one of the arguments")
            continue
        args = tuple(map(operand.__getitem__, node.args))
        if node in inlined:
            operand[node] = "-" + args[0]  # the sum's template writes `a - b`
            continue
        # Split wide sums/products left to right: the same rounding as one long expression.
        while len(args) > MAX_WIDTH:
            partial = f"t{counter}"
            counter += 1
            steps.append(Step(partial, op, args[:MAX_WIDTH]))
            args = (partial, *args[MAX_WIDTH:])
        target = claimed.get(node)
        if target is None:
            target = f"t{counter}"
            counter += 1
        note = to_text(node) if comments and sizes[node] <= COMMENT_MAX_NODES else ""
        steps.append(Step(target, op, args, note))
        operand[node] = target
    return Program(name, tuple(input_names), tuple(steps),
                   tuple((label, operand[node]) for label, node in outputs))
