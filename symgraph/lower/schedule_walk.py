"""The schedule of a big order made while walking it: one pass per node instead of three.

`schedule.schedule_all` of outputs whose first one's order alone is longer than
`DEFER_MIN_NODES` (a `DeferredProgram`: the codes alone) walks the rest of the DAG depth first
and encodes each node as it is finished, the codes table being the walk's set of finished
nodes; the eager path walks the order, scans it for negations, then encodes it. Which
negations get no step of their own (those only sums use: `a - b`) is known only once every
use is seen, so each unclaimed negation is a step for now, and afterwards, in NumPy, the ones
that only sums read are dropped and every code renumbered. The result is what `_schedule`
makes of the same order, array for array (tests/test_schedule_walk.py), or None where the
eager path must decide (a negation of a negation or of a constant: never seen from `apply`).
What is found is integers (`Walked`); schedule.py makes the Program of it (so this module
imports none of schedule's: no import cycle).

Codes are those of `Encoding` less its `offset` (which needs the order's length): a step r is
2r, input i ``-2i - 2``, constant k ``-2 len(inputs) - 2 - 2k``.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import compress
from typing import NamedTuple

import numpy as np

from ..ir.node import Node
from ..ir.ops import OPS

_INPUTS_LAST, _CONSTANTS_LAST = 1 << 61, 1 << 62  # (as they are, after the steps)
_ARITHMETIC = frozenset(name for name, spec in OPS.items() if spec.cost <= 1)


def terms_in_order(args: tuple[Node, ...], code_of: dict[Node, int]) -> tuple[Node, ...]:
    """A sum's terms (three or more) in the order their values can be made: an arithmetic
    one where its last operand that is a step is made (one of inputs and constants alone, or
    a costlier one, such as a digamma, where it is made itself; a negation where its argument
    is: it is inlined as `a - x` or made right after it), then inputs and constants as the
    sum has them (``t0 + b - y``).

    Computed left to right, a lane kernel's list schedule (backends.numba.order) adds each
    term as soon as it is made instead of keeping every term alive until the first in the
    DAG's order is ready (FIT gauss_loglik@24: 70 values alive at the widest, 27 so). Two
    terms keep their order: a + b is b + a, bit for bit. Codes of both paths (with or without
    `offset`) order the same way, and a negation counts as its argument (the eager path
    inlines some that the walk settles only later), so the eager and the walked schedule
    agree."""
    if len(args) <= 2:
        return args
    keys = []
    for node in args:
        if node.op == "neg":
            node = node.args[0]
        op = node.op
        if op == "const":
            key = _CONSTANTS_LAST
        elif op == "symbol":
            key = _INPUTS_LAST
        elif op not in _ARITHMETIC:
            key = code_of[node]  # its value comes where it is made (late: it is costly)
        else:
            key = None
            for arg in node.args:
                if arg.op == "neg":
                    arg = arg.args[0]
                if arg.op != "const" and arg.op != "symbol":
                    code = code_of[arg]
                    if key is None or code > key:
                        key = code
            if key is None:  # of inputs and constants alone: where it is made
                key = code_of[node]
        keys.append(key)
    if all(a <= b for a, b in zip(keys, keys[1:])):
        return args
    return tuple(args[k] for k in sorted(range(len(args)), key=keys.__getitem__))


def _finished(roots: list[Node], first: list[Node], done: dict) -> Iterator[Node | None]:
    """`first` (the first root's order), then the other roots' nodes depth first as
    `traversal.topological_prefixes` orders them, each once, after its arguments; None after
    each root. A node is done once its caller has coded it (`done` is the codes table)."""
    yield from first
    yield None
    for root in roots[1:]:
        if root not in done:
            stack = [(root, iter(root.args))]
            push, top = stack.append, stack.pop
            while stack:
                node, pending = stack[-1]
                for child in pending:
                    if child not in done:
                        if child.args:
                            push((child, iter(child.args)))
                            break
                        yield child  # a leaf: finished at once
                else:
                    top()
                    yield node
        yield None


class _Codes:
    """Node -> its final code (the walk's code renumbered), as `_schedule`'s ``code_of``."""

    def __init__(self, code_of: dict[Node, int], final: np.ndarray, offset: int) -> None:
        self.code_of, self.final, self.offset = code_of, final, offset

    def __getitem__(self, node: Node) -> int:
        c = self.code_of[node]
        return c + self.offset if c < 0 else int(self.final[c >> 1])


class SettledNegations:
    """What `schedule._same_choices` asks of the walked order's negations: whether a prefix
    (the first outputs' order, `mark` steps of the walk) inlines the same ones as the whole.
    `first_use[r]`: the first step that is no sum and reads the negation step r (n: none)."""

    def __init__(self, pending: np.ndarray, first_use: np.ndarray, marks: dict[int, int]
                 ) -> None:
        self.pending, self.first_use, self.marks = pending, first_use, marks

    def prefix_agrees(self, end: int) -> bool:
        """The negations of ``order[:end]`` that only sums read there are the ones only sums
        read anywhere (no output claims them: the caller checks that first)."""
        mark, n = self.marks[end], len(self.first_use)
        used = self.first_use[self.pending[self.pending < mark]]
        return not bool(np.any((used >= mark) & (used < n)))


class Walked(NamedTuple):
    """What `schedule._schedule` finds of a deferred program, in integers (schedule.py makes
    the Program): codes as `Encoding`'s, offset included."""

    order: list[Node]  # `topological_prefixes`' order and ends of the outputs
    ends: list[int]
    steps_at: dict[int, int]  # an end -> the steps made before it
    code_of: _Codes
    operands: array  # Encoding's operands, ops, counts, constants, n_steps, offset
    ops: list[str]
    counts: array
    constants: list[float]
    n_steps: int
    offset: int
    labels: dict[int, str]  # a step claimed by an output -> its label
    negated_inputs: list[int]  # the codes of inputs' negations that sums read (`a - x`)
    negations: SettledNegations


def walk_schedule(outputs: list[tuple[str, Node]], first: list[Node], inputs: Sequence[Node],
                  input_names: Sequence[str], claimed: dict[Node, str], width: int
                  ) -> Walked | None:
    """`schedule._schedule`'s findings of `outputs` over their order (`first`: the first
    one's) for a DeferredProgram (`claimed`: `_claims(outputs)`; sums and products wider
    than `width` chained); None where the eager path must decide."""
    roots = [node for _, node in outputs]
    claim = claimed.get
    input_code = {node: -2 * i - 2 for i, (node, _) in enumerate(
        zip(inputs, input_names, strict=True))}  # (as many names as inputs, or ValueError)
    base = -2 * len(inputs) - 2
    code_of: dict[Node, int] = {}
    order: list[Node] = []
    codes, ops, counts, constants = [], [], [], []
    pending: list[int] = []  # unclaimed negations' steps: inlined or not, decided below
    labels: dict[int, str] = {}
    ends: list[int] = []
    marks: list[int] = []  # the walk's steps made at each end
    n = 0
    get_code, keep, encode = code_of.__getitem__, order.append, codes.extend
    add_op, add_count = ops.append, counts.append
    for node in _finished(roots, first, code_of):
        if node is None:
            ends.append(len(order))
            marks.append(n)
            continue
        keep(node)
        op = node.op
        if op == "const":
            code_of[node] = base - 2 * len(constants)
            constants.append(float(node.value))
            continue
        if op == "symbol":
            code = input_code.get(node)
            if code is None:
                raise ValueError(f"the expression depends on {node.value!r}, which is not "
                                 "one of the arguments")
            code_of[node] = code
            continue
        args = node.args
        if op == "add" and len(args) > 2:
            args = terms_in_order(args, code_of)
        if len(args) <= width:  # (the codes straight into the list: no tuple of them)
            add_count(len(args))
            encode(map(get_code, args))
        else:  # wide sums and products: chained, left to right
            refs = tuple(map(get_code, args))
            while len(refs) > width:
                add_op(op)
                add_count(width)
                encode(refs[:width])
                refs = (2 * n, *refs[width:])
                n += 1
            add_count(len(refs))
            encode(refs)
        label = claim(node)
        if label is not None:
            labels[n] = label
        elif op == "neg":
            pending.append(n)
        add_op(op)
        code_of[node] = 2 * n
        n += 1
    for node, code in input_code.items():  # (inputs the outputs never reach too)
        code_of.setdefault(node, code)
    return _settle(len(inputs), order, ends, marks, code_of, codes, ops, counts, constants,
                   pending, labels, n)


def _settle(n_inputs: int, order: list[Node], ends: list[int], marks: list[int],
            code_of: dict[Node, int], codes: list[int], ops: list[str], counts: list[int],
            constants: list[float], pending: list[int], labels: dict[int, str], n: int
            ) -> Walked | None:
    """The negations only sums read dropped, the codes renumbered."""
    offset = 2 * (n_inputs + len(order) + 1)
    c = np.frombuffer(array("q", codes), np.int64)
    count = np.frombuffer(array("q", counts), np.int64)
    step_of = np.repeat(np.arange(n), count)
    is_pending = np.zeros(n + 1, bool)  # (index n: the inputs' and constants' codes)
    is_pending[pending] = True
    r = np.where(c >= 0, c >> 1, n)
    reads = np.flatnonzero(is_pending[r])  # operands that are a pending negation
    readers = step_of[reads].tolist()
    by_others = np.array([ops[s] != "add" for s in readers], bool)
    first_use = np.full(n, n, np.int64)
    read, at = np.unique(r[reads][by_others], return_index=True)  # steps ascend: the first
    first_use[read] = step_of[reads][by_others][at]
    inlined = np.zeros(n, bool)
    inlined[pending] = first_use[pending] == n
    starts = np.cumsum(count) - count
    negated = c[starts[inlined]]  # an inlined negation's operand
    if np.any(negated <= -2 * n_inputs - 2) or np.any(
            inlined[np.maximum(negated, 0) >> 1] & (negated >= 0)):
        return None  # of a constant (the tape needs names) or of another negation
    kept = ~inlined
    before = np.concatenate(([0], np.cumsum(kept)))  # kept steps before each walk step
    final = offset + 2 * before[:-1]
    final[inlined] = np.where(negated >= 0, final[np.maximum(negated, 0) >> 1],
                              negated + offset) ^ 1
    renamed = np.where(c >= 0, final[np.maximum(c, 0) >> 1], c + offset)
    operands = array("q", renamed[kept[step_of]].astype(np.int64).tobytes())
    ops = list(compress(ops, kept.tolist())) if inlined.any() else ops
    return Walked(order, ends, {end: int(before[mark]) for end, mark in zip(ends, marks)},
                  _Codes(code_of, final, offset), operands, ops,
                  array("q", count[kept].tobytes()), constants, int(before[-1]), offset,
                  {int(before[r]): label for r, label in labels.items()},
                  [(offset + arg) ^ 1 for arg in negated[negated < 0].tolist()],
                  SettledNegations(np.array(pending, np.int64), first_use,
                                   dict(zip(ends, marks))))
