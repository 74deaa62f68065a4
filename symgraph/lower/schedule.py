"""Schedule: output nodes -> one flat straight-line program the emitters can print.

Each distinct subexpression becomes one step, computed once, after its arguments; nodes no
output needs are never reached. Temporaries are named ``t0, t1, ...`` in order of first use, and
a step whose value is an output is named after the output (``df_dx``), so programs read well and
are identical in every process. Wide sums and products are split into chained steps of at most
`MAX_WIDTH` operands: never one giant expression, which CPython and LLVM handle badly.

Operands are data, not code: an `Operand` is a name or a float constant, and a name may be
negated (a negation used only by sums has no step: the sum subtracts it). Each backend spells
them (backends.common.operand_text for Python and Numba; the tape reads them as they are).

Every program also carries its `Encoding` (operands as int codes, each step's op and operand
count): the tape builder, the census and the costs read that. Orders of more than
`DEFER_MIN_NODES` nodes make a `DeferredProgram`, whose Steps are made from the codes on
first use, which a program run on the tape never has: the 50,001-node DAG's two programs
(167,780 steps) schedule in 0.43 s instead of 0.63 s of CPU (load ~3.5, 2026-12-01). When the
first output's order alone is that long, the rest is scheduled as it is walked
(`lower.schedule_walk`: one pass a node, its negations settled after; 0.65 -> 0.47 s, load ~4.5).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import NamedTuple

from ..ir.node import Node
from ..ir.printer import to_text
from ..ir.traversal import bulk, capped_tree_sizes, topological_order, topological_prefixes
from .schedule_walk import Walked, terms_in_order, walk_schedule
from .steps import (
    CONST,
    NAME,
    DeferredProgram,
    Encoding,
    LazySteps,
    Operand,
    Program,
    Step,
    StepsOnUse,
    power_exponent,
    steps_view,
)

__all__ = ["CONST", "NAME", "MAX_WIDTH", "DeferredProgram", "Encoding", "LazySteps", "Operand",
           "Program", "Step", "StepsOnUse", "power_exponent", "schedule", "schedule_all",
           "steps_view"]

MAX_WIDTH = 16
COMMENT_MAX_NODES = 8  # a step's comment shows its expression when the tree is this small
# Programs over DAGs larger than this get no step comments: a comment costs ~0.5 ms of
# tidying, so 10^5 of them would take a minute, and such programs run on the tape (whose
# printed steps then show the operations alone).
COMMENT_MAX_PROGRAM = 4_000
# Larger orders than this make a DeferredProgram (their Steps made on first use).
DEFER_MIN_NODES = COMMENT_MAX_PROGRAM


class _Negations(NamedTuple):
    """An order's negations (index, node), and for each one used by something other than a
    sum, the index of its first such use: one pass, for the order and its prefixes."""

    found: list[tuple[int, Node]]
    first_use: dict[Node, int]

    @classmethod
    def of(cls, order: list[Node]) -> _Negations:
        found: list[tuple[int, Node]] = []
        first_use: dict[Node, int] = {}
        for index, node in enumerate(order):
            op = node.op
            if op == "add":
                continue
            if op == "neg":
                found.append((index, node))
            for arg in node.args:
                if arg.op == "neg" and arg not in first_use:
                    first_use[arg] = index
        return cls(found, first_use)

    def feeding_only_sums(self, end: int, claimed: dict[Node, str]) -> set[Node]:
        """The negations of ``order[:end]`` whose every use there is a sum (and that are no
        output): they print as subtraction, with no step of their own."""
        first_use = self.first_use
        return {node for index, node in self.found if index < end
                and first_use.get(node, end) >= end and node not in claimed}


def _claims(outputs: Sequence[tuple[str, Node]]) -> dict[Node, str]:
    """Operation nodes that are outputs -> the label of their first slot (their step's name)."""
    claimed: dict[Node, str] = {}
    for label, node in outputs:
        if node.args and node not in claimed:
            claimed[node] = label
    return claimed


@bulk
def schedule(name: str, outputs: Sequence[tuple[str, Node]], inputs: Sequence[Node],
             input_names: Sequence[str], comments: bool = True) -> Program:
    """Flatten the DAG under `outputs` into a Program over the given input symbols."""
    return schedule_all([(name, outputs)], inputs, input_names, comments)[0]


@bulk
def schedule_all(jobs: Sequence[tuple[str, Sequence[tuple[str, Node]]]], inputs: Sequence[Node],
                 input_names: Sequence[str], comments: bool = True) -> list[Program]:
    """`schedule` of each (name, outputs) job, the same Programs, with shared work: the DAG is
    walked once for the job with the most outputs, and a job whose outputs are the first ones
    of it (the value program's are value_grad's first) takes its first steps as they are, when
    they are what its own schedule would make (no node of it named or kept as a step by the
    longer job's other outputs); otherwise it is scheduled from its part of the order."""
    jobs = [(name, list(outputs)) for name, outputs in jobs]
    longest = max(range(len(jobs)), key=lambda i: len(jobs[i][1])) if jobs else 0
    whole = jobs[longest][1] if jobs else []
    prefix_of = {}  # job index -> number of the longest job's outputs it has
    for i, (_, outputs) in enumerate(jobs):
        k = len(outputs)
        if i != longest and k and whole[:k] == outputs:  # pairs: labels equal, nodes identical
            prefix_of[i] = k
    if not jobs:
        return []
    walked = None
    first = topological_order([whole[0][1]]) if whole else []
    if len(first) > DEFER_MIN_NODES:  # deferred: scheduled as walked (lower.schedule_walk)
        walked = walk_schedule(whole, first, inputs, input_names, _claims(whole), MAX_WIDTH)
    if walked is not None:
        order, ends = walked.order, walked.ends
        made = _walked_program(jobs[longest][0], whole, walked, input_names)
    else:  # (the first output's walk is kept: `traversal.topological_prefixes`)
        order, ends = topological_prefixes([node for _, node in whole])
        marks = sorted({ends[k - 1] for k in prefix_of.values()})
        made = _schedule(jobs[longest][0], whole, order, inputs, input_names, comments, marks)
    programs: list[Program | None] = [None] * len(jobs)
    program, at_mark, operand, claimed, inlined, code_of = made[:6]
    programs[longest] = program
    for i, k in prefix_of.items():
        name, outputs = jobs[i]
        end = ends[k - 1]
        mine = _claims(outputs)
        same_comments = ((comments and end <= COMMENT_MAX_PROGRAM)
                         == (comments and len(order) <= COMMENT_MAX_PROGRAM))
        if same_comments and _same_choices(end, at_mark[end], mine, made):
            n = at_mark[end]
            slots = tuple((label, operand[node]) for label, node in outputs)
            whole_encoding = program.encoding
            deferred = isinstance(program, DeferredProgram) and "steps" not in vars(program)
            steps = None if deferred else program.steps[:n]
            encoding = None if whole_encoding is None else whole_encoding._replace(
                steps=steps, outputs=slots, output_operands=[code_of[node] for _, node in
                                                            outputs], n_steps=n)
            programs[i] = DeferredProgram.of(program, n, name, slots, encoding) if deferred \
                else Program(name, tuple(input_names), steps, slots, encoding)
        else:
            programs[i] = _schedule(name, outputs, order[:end], inputs, input_names, comments,
                                    [])[0]
    for i, (name, outputs) in enumerate(jobs):
        if programs[i] is None:
            programs[i] = _schedule(name, outputs, topological_order(
                [node for _, node in outputs]), inputs, input_names, comments, [])[0]
    return programs


def _same_choices(end: int, steps_made: int, claimed_here: dict[Node, str], made: tuple
                  ) -> bool:
    """Whether scheduling ``order[:end]`` (a prefix of the longer job's order, whose first
    `steps_made` steps it made) for its own outputs names the same steps and inlines the same
    negations as the longer job did (the claims of its outputs are the same: they are the
    longer job's first). `made`: what `_schedule` returned of the longer job."""
    _, _, _, claimed, inlined, code_of, negations, offset = made
    if any((code_of[node] - offset) >> 1 < steps_made for node in claimed
           if node not in claimed_here):
        return False  # a node of it is another output of the longer job: named after that
    if inlined is None:  # scheduled as walked: its negations settled from the codes
        return negations.prefix_agrees(end)
    return negations.feeding_only_sums(end, claimed_here) == {
        node for index, node in negations.found if index < end and node in inlined}


def _walked_program(name: str, outputs: list[tuple[str, Node]], walked: Walked,
                    input_names: Sequence[str]) -> tuple:
    """`_schedule`'s result from what `schedule_walk` found (a DeferredProgram)."""
    w, offset = walked, walked.offset
    by_code: list[Operand | None] = [None] * offset
    for i, ident in enumerate(input_names):
        by_code[offset - 2 * i - 2] = Operand(NAME, ident)
    for k, value in enumerate(w.constants):
        by_code[offset - 2 * len(input_names) - 2 - 2 * k] = Operand(CONST, value)
    for code in w.negated_inputs:  # the sum's template: `a - x`
        by_code[code] = by_code[code ^ 1].negative()
    encoding = Encoding(None, (), w.operands, [w.code_of[node] for _, node in outputs],
                        w.constants, offset, w.ops, w.counts, w.n_steps)
    made = DeferredProgram.make(name, tuple(input_names), by_code, w.labels, encoding)
    operand = _Operands(w.code_of, by_code, made._operand)
    slots = tuple((label, operand[node]) for label, node in outputs)
    program = DeferredProgram.of(made, w.n_steps, name, slots, encoding._replace(outputs=slots))
    return program, w.steps_at, operand, _claims(outputs), None, w.code_of, w.negations, offset


def _schedule(name: str, outputs: list[tuple[str, Node]], order: list[Node],
              inputs: Sequence[Node], input_names: Sequence[str], comments: bool,
              marks: list[int]) -> tuple:
    """The Program of `outputs` over `order` (their topological order), and the number of steps
    made after each of the first `marks` nodes; each node's operand, claims and inlined
    negations, its code, the order's `_Negations` and the codes' offset.

    A node's operand is found by its code (`Encoding`'s, plus `offset` to make it an index of
    `by_code`): the codes are the Encoding the tape builder reads, at the cost of one list
    index per operand. Orders of more than `DEFER_MIN_NODES` nodes make a `DeferredProgram`:
    the codes alone, its Steps made when first asked for (a program on the tape never is)."""
    offset = 2 * (len(inputs) + len(order) + 1)  # the codes of inputs and constants are < 0
    by_code: list[Operand | None] = [None] * offset
    code_of: dict[Node, int] = {}
    for i, (node, ident) in enumerate(zip(inputs, input_names, strict=True)):
        code_of[node] = offset - 2 * i - 2
        by_code[offset - 2 * i - 2] = Operand(NAME, ident)
    codes: list[int] = []  # every step's operands' codes, in order
    constants: list[float] = []  # one per constant node
    ops: list[str] = []  # each step's op and operand count
    counts: list[int] = []
    base, encodable = offset - 2 * len(inputs) - 2, True
    claimed = _claims(outputs)
    comments = comments and len(order) <= COMMENT_MAX_PROGRAM
    sizes = capped_tree_sizes(order, COMMENT_MAX_NODES + 1) if comments else {}
    negations = _Negations.of(order)
    inlined = negations.feeding_only_sums(len(order), claimed)
    deferred = len(order) > DEFER_MIN_NODES and not comments
    steps: list[Step] = []
    labels: dict[int, str] = {}  # deferred: step index -> its output label
    n_steps = counter = 0
    new = tuple.__new__  # builds the records without their Python-level __new__: ~2x faster
    at_mark: dict[int, int] = {}
    pending_marks = list(reversed(marks))
    next_mark = pending_marks.pop() if pending_marks else -1
    get_code, claim, emit = code_of.__getitem__, claimed.get, steps.append
    get_operand, encode, add_operands = by_code.__getitem__, codes.extend, by_code.extend
    add_op, add_count = ops.append, counts.append
    for index, node in enumerate(order):
        if index == next_mark:
            at_mark[index] = n_steps if deferred else len(steps)
            next_mark = pending_marks.pop() if pending_marks else -1
        op = node.op
        if op == "const":
            value = float(node.value)
            code = code_of[node] = base - 2 * len(constants)
            by_code[code] = new(Operand, (CONST, value, False))
            constants.append(value)
            continue
        if op == "symbol":
            if node not in code_of:
                raise ValueError(f"the expression depends on {node.value!r}, which is not "
                                 "one of the arguments")
            continue
        args = node.args
        if op == "add" and len(args) > 2:
            args = terms_in_order(args, code_of)
        refs = tuple(map(get_code, args))
        if node in inlined:
            code = code_of[node] = refs[0] ^ 1
            if refs[0] < offset or not deferred:  # (deferred: a step's, from its code)
                by_code[code] = by_code[refs[0]].negative()  # the sum's template: `a - b`
            encodable = encodable and (refs[0] >= offset or by_code[refs[0]].kind == NAME)
            continue
        if deferred:  # the codes alone (`DeferredProgram` makes the Steps from them)
            while len(refs) > MAX_WIDTH:
                add_op(op)
                add_count(MAX_WIDTH)
                encode(refs[:MAX_WIDTH])
                refs = (offset + 2 * n_steps, *refs[MAX_WIDTH:])
                n_steps += 1
            if node in claimed:
                labels[n_steps] = claimed[node]
            add_op(op)
            add_count(len(refs))
            encode(refs)
            code_of[node] = offset + 2 * n_steps
            n_steps += 1
            continue
        args = tuple(map(get_operand, refs))
        # Split wide sums/products left to right: the same rounding as one long expression.
        while len(args) > MAX_WIDTH:
            partial = f"t{counter}"
            counter += 1
            emit(Step(partial, op, args[:MAX_WIDTH]))
            add_op(op)
            add_count(MAX_WIDTH)
            encode(refs[:MAX_WIDTH])
            add_operands((Operand(NAME, partial), None))
            args, refs = (by_code[-2], *args[MAX_WIDTH:]), (len(by_code) - 2, *refs[MAX_WIDTH:])
        target = claim(node)
        if target is None:
            target = f"t{counter}"
            counter += 1
        note = to_text(node) if comments and sizes[node] <= COMMENT_MAX_NODES else ""
        emit(new(Step, (target, op, args, note)))
        add_op(op)
        add_count(len(refs))
        encode(refs)
        code_of[node] = len(by_code)
        add_operands((new(Operand, (NAME, target, False)), None))
    if not deferred:
        n_steps = len(steps)
    if next_mark == len(order):
        at_mark[next_mark] = n_steps
    encoding = Encoding(None, (), array("q", codes), [code_of[node] for _, node in outputs],
                        constants, offset, ops, array("q", counts), n_steps)
    if deferred:
        made = DeferredProgram.make(name, tuple(input_names), by_code, labels, encoding)
        operand = _Operands(code_of, by_code, made._operand)
        slots = tuple((label, operand[node]) for label, node in outputs)
        program = DeferredProgram.of(made, n_steps, name, slots, encoding._replace(
            outputs=slots))
        if not encodable:  # (a constant's negation kept as an operand: the tape needs names)
            program = Program(name, program.inputs, program.steps, slots)
    else:
        operand = _Operands(code_of, by_code, None)
        steps, slots = tuple(steps), tuple((label, operand[node]) for label, node in outputs)
        encoding = encoding._replace(steps=steps, outputs=slots) if encodable else None
        program = Program(name, tuple(input_names), steps, slots, encoding)
    return program, at_mark, operand, claimed, inlined, code_of, negations, offset


class _Operands:
    """Node -> Operand, read through the codes (a dict of them would cost 10^5 insertions);
    a deferred program's steps' through `of_step`."""

    def __init__(self, code_of: dict[Node, int], by_code: list, of_step) -> None:
        self.code_of, self.by_code, self.of_step = code_of, by_code, of_step

    def __getitem__(self, node: Node) -> Operand:
        code = self.code_of[node]
        if self.of_step is not None and code >= len(self.by_code):
            return self.of_step(code)
        return self.by_code[code]
