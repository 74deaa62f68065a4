"""Programs: what the schedule makes and the backends read.

A `Program` is straight-line code: inputs, `Step`s (a target, an op and `Operand`s: names,
possibly negated, or float constants), then output slots. Its `Encoding` holds the same
operands as int codes with each step's op and operand count (the tape builder, the census and
the costs read those). A `DeferredProgram` makes its Steps from the codes on first use.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate, repeat
from typing import Any, NamedTuple

from ..ir.ops import OPS, small_power

NAME, CONST = "name", "const"  # Operand.kind


class Operand(NamedTuple):  # a tuple: 10^5-step programs are built and read in bulk
    """A step's argument: a name (an input, a temporary, an output label) or a float constant.
    `negated` is for names only (the negation of a constant is a constant)."""

    kind: str  # NAME or CONST
    value: str | float  # the identifier, or the constant
    negated: bool = False

    def negative(self) -> Operand:
        if self.kind == CONST:
            return Operand(CONST, -self.value)
        return Operand(NAME, self.value, not self.negated)


class Step(NamedTuple):  # a tuple: 10^5-step programs are built and read in bulk
    target: str
    op: str
    operands: tuple[Operand, ...]
    comment: str = ""


def power_exponent(step: Step) -> int | None:
    """k when `step` is ``x ** k`` for a constant integer ``0 < |k| <= 4``, which every backend
    writes as multiplications (`ops.small_power` decides); else None."""
    exponent = step.operands[1]
    return small_power(exponent.value) if exponent.kind == CONST else None


class Encoding(NamedTuple):
    """A program's operands as ints, made with its steps for the tape builder (which would
    otherwise look 10^5 names up again): ``2 * r + negated + offset``, r a step's index,
    ``-i - 1`` input i, or ``-len(inputs) - 1 - k`` the constant ``constants[k]``; and each
    step's op and operand count. Valid for the steps and outputs it was made with
    (`Program.encoded` checks they are its own; `steps` is None for a `DeferredProgram`'s)."""

    steps: tuple[Step, ...] | None
    outputs: tuple[tuple[str, Operand], ...]
    operands: array  # int64: the steps' operands in order (a prefix's: its longer program's)
    output_operands: list[int]
    constants: list[float]  # one per constant node (the tape keeps one of equal ones)
    offset: int = 0  # added to every code above
    ops: list[str] | None = None  # each step's op (a prefix's: its longer program's)
    counts: array | None = None  # int64: each step's number of operands (the same)
    n_steps: int = 0  # the program's: the first n_steps of `ops` and `counts`


@dataclass(frozen=True)
class Program:
    """A straight-line kernel: inputs, steps, then output slots in order."""

    name: str
    inputs: tuple[str, ...]
    steps: tuple[Step, ...]
    outputs: tuple[tuple[str, Operand], ...]  # (label, operand)
    encoding: Encoding | None = field(default=None, compare=False, repr=False)

    @property
    def encoded(self) -> Encoding | None:
        """`encoding` when it was made for these steps and outputs (a `replace` keeps it)."""
        e = self.encoding
        return e if e is not None and e.steps is self.steps and e.outputs is self.outputs \
            else None

    @cached_property
    def census(self) -> dict[tuple[str, int, int | None], int]:
        """How many steps there are of each (op, operand count, `power_exponent` of a pow or
        None), in order of first use: one pass over the steps for what the strategy choice,
        the batch sizes, the backends' op checks and the API read."""
        encoded = self.encoded
        if encoded is not None and encoded.ops is not None:  # without the Steps
            return _census(encoded, len(self.inputs))
        counts: dict[tuple[str, int, int | None], int] = {}
        get = counts.get
        for s in self.steps:
            op = s.op
            key = (op, len(s.operands), power_exponent(s) if op == "pow" else None)
            counts[key] = get(key, 0) + 1
        return counts

    @cached_property
    def op_count(self) -> int:
        """Arithmetic operations: a k-operand sum or product counts k - 1, any other step 1."""
        return sum((max(1, n - 1) if op in ("add", "mul") else 1) * count
                   for (op, n, _), count in self.census.items())

    @cached_property
    def cost(self) -> int:
        """Operations weighted by the op table's `cost` (a transcendental call counts ~8)."""
        total = 0
        for (op, n, k), count in self.census.items():
            if op in ("add", "mul"):
                total += max(1, n - 1) * count
            elif op == "pow" and k is not None:
                total += max(1, abs(k) - 1) * count  # emitted as products
            else:
                total += OPS[op].cost * count
        return total

    @property
    def n_steps(self) -> int:
        """``len(steps)``, without making the steps of a program that defers them."""
        return len(self.steps)


def _census(e: Encoding, n_inputs: int) -> dict[tuple[str, int, int | None], int]:
    """`Program.census` from an Encoding: the same counts, in the same order."""
    n = e.n_steps
    ops, counts = e.ops[:n], e.counts[:n]
    if "pow" not in ops:  # counted as pairs: no list of 10^5 keys (0.07 -> 0.03 s at 50k)
        return {(op, k, None): c for (op, k), c in Counter(zip(ops, counts)).items()}
    counts = counts.tolist()
    keys = list(zip(ops, counts, repeat(None)))
    if "pow" in ops:
        starts = list(accumulate(counts, initial=0))
        for j in [j for j, op in enumerate(ops) if op == "pow"]:
            keys[j] = ("pow", counts[j], _power_of(e, starts[j], counts[j], n_inputs))
    return dict(Counter(keys))


def _power_of(e: Encoding, start: int, count: int, n_inputs: int) -> int | None:
    """`power_exponent` of the pow step whose operands start at `start`."""
    k = -((e.operands[start + 1] - e.offset) >> 1) - n_inputs - 1 if count == 2 else -1
    return small_power(e.constants[k]) if k >= 0 else None


class StepsOnUse(Program):
    """A Program that makes its steps on first use (`DeferredProgram`, the expression cache's
    `KeptProgram`): it pickles, compares and hashes as the plain Program of those steps."""

    def __reduce__(self) -> tuple:
        return Program, (self.name, self.inputs, self.steps, self.outputs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Program):
            return NotImplemented
        return (self.name, self.inputs, self.steps, self.outputs) == (
            other.name, other.inputs, other.steps, other.outputs)

    __hash__ = Program.__hash__


class DeferredProgram(StepsOnUse):
    """A Program whose Steps are made from its Encoding when first asked for: a program run
    on the tape needs only the codes (its census, op count and cost come from them too), and
    at 168,000 steps the Steps and their Operands are a third of the schedule's time. It is
    a `Program` in every other respect: it compares, hashes and pickles as one."""

    @classmethod
    def make(cls, name: str, inputs: tuple[str, ...], by_code: list, labels: dict[int, str],
             encoding: Encoding) -> DeferredProgram:
        program = object.__new__(cls)
        vars(program).update(name=name, inputs=inputs, outputs=(), encoding=encoding,
                             _by_code=by_code, _labels=labels, _temps=sorted(labels))
        return program

    @classmethod
    def of(cls, made: DeferredProgram, n_steps: int, name: str,
           outputs: tuple[tuple[str, Operand], ...], encoding: Encoding) -> DeferredProgram:
        """The program of `made`'s first `n_steps` steps, named `name`, with `outputs`."""
        program = object.__new__(cls)
        vars(program).update({**vars(made), "name": name, "outputs": outputs,
                              "encoding": encoding})
        vars(program).pop("steps", None)
        return program

    def _target(self, r: int) -> str:
        label = self._labels.get(r)
        return label if label is not None else f"t{r - bisect_left(self._temps, r)}"

    def _operand(self, code: int) -> Operand:
        """The Operand of a step's `code` (offset included)."""
        r = (code - self.encoding.offset) >> 1
        return Operand(NAME, self._target(r), bool(code & 1))

    @property
    def n_steps(self) -> int:
        return self.encoding.n_steps

    @property
    def encoded(self) -> Encoding | None:
        if "_by_code" not in vars(self):  # made by `replace`: its steps may be others
            return Program.encoded.fget(self)
        e = self.encoding
        return e if e.outputs is self.outputs else None

    @cached_property
    def steps(self) -> tuple[Step, ...]:  # type: ignore[override]
        e, by_code = self.encoding, self._by_code
        offset, labels, n = e.offset, self._labels, e.n_steps
        names: list[Operand] = []  # per step: its Operand, then the negated one
        counter = 0
        for r in range(n):
            target = labels.get(r)
            if target is None:
                target = f"t{counter}"
                counter += 1
            names += (Operand(NAME, target), Operand(NAME, target, True))
        operand = [*by_code[:offset], *names].__getitem__
        codes = e.operands[:sum(e.counts[:n])].tolist()
        new, steps, at = tuple.__new__, [], 0
        for r, op, count in zip(range(n), e.ops, e.counts):
            steps.append(new(Step, (names[2 * r].value, op, tuple(map(
                operand, codes[at:at + count])), "")))
            at += count
        return tuple(steps)


class LazySteps(Sequence):
    """The steps of a program that makes them on first use (a `DeferredProgram`, or a program
    read back from a record), as a sequence that asks for them only when read: a tape's steps
    are for printing it, and a tape that is only run never makes them."""

    def __init__(self, program: Program) -> None:
        self._program = program

    def __len__(self) -> int:
        return self._program.n_steps

    def __getitem__(self, index: Any) -> Any:
        return self._program.steps[index]

    def __iter__(self) -> Iterator[Step]:
        return iter(self._program.steps)


def steps_view(program: Program) -> Sequence[Step]:
    """`program.steps` where they are made, else a LazySteps of them."""
    return program.steps if "steps" in vars(program) else LazySteps(program)
