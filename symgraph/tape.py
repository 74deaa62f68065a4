"""Tape kernels: programs as instruction arrays for the one cached interpreter.

A straight-line kernel costs Numba/LLVM compile time that grows faster than its length (minutes
at 10^5 steps). A tape costs none: each `Program` becomes a few NumPy arrays that the
interpreter in `symgraph.tape_interpreter` (compiled once per machine) runs as they are.

    module = build_tape_module(programs)      # drop-in for a generated module
    module.value_grad_row(x, out)             # x: (n,) floats, out: (k,)
    module.value_grad_batch(X, OUT)           # X: (N, n), OUT: (N, k), rows in parallel
    print(module.source)                      # the tape as readable steps

Register file: ``[inputs | constants | work registers]``. Inputs and constants have fixed
registers; a step's value gets a work register when first written and gives it back after its
last use (linear scan over the program, most recently freed register first), so the file stays
small even for 10^6-instruction tapes. n-ary sums and products become chains of binary
instructions evaluated left to right, and ``x**k`` for a literal integer ``0 < |k| <= 4``
becomes multiplications: the same arithmetic, in the same order, as the straight-line kernels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numba
import numpy as np

from .naming import comment_text
from .ops import OPS
from .schedule import Program, Step
from .tape_interpreter import (
    ADD,
    DIV,
    INSTRUCTION_NAMES,
    MUL,
    NEG,
    OP_NAMES,
    OPCODES,
    SUB,
    run_batch,
    run_row,
)

_SPECIAL_LITERALS = {"math.nan": math.nan, "math.inf": math.inf, "-math.inf": -math.inf}
_CHAINED = {"add": ADD, "mul": MUL}
LANE_BUDGET = 1 << 17  # float64 registers per thread in a batch (1 MB)


@dataclass(frozen=True, eq=False)
class Tape:
    """One program as arrays. Instruction i: ``regs[targets[i]] = op(regs[operands[i]])``."""

    name: str
    input_names: tuple[str, ...]
    output_labels: tuple[str, ...]
    n_registers: int
    opcodes: np.ndarray  # int32 (S,), codes of tape_interpreter.INSTRUCTION_NAMES
    operands: np.ndarray  # int32 (S, 3), unused slots repeat the first operand
    targets: np.ndarray  # int32 (S,)
    constants: np.ndarray  # float64 (C,), in registers n_inputs ... n_inputs + C - 1
    outputs: np.ndarray  # int32 (K,), the register of each output
    step_of: np.ndarray  # int32 (S,), the program step an instruction belongs to
    steps: tuple[Step, ...] = ()  # the program's steps, for printing; () when shipped

    @property
    def n_inputs(self) -> int:
        return len(self.input_names)

    @property
    def arrays(self) -> tuple:
        """The interpreter's arguments before the point: what a worker needs to run the tape."""
        return (self.opcodes, self.operands, self.targets, self.constants, self.outputs,
                self.n_registers)

    def __repr__(self) -> str:
        return (f"<Tape {self.name}: {len(self.opcodes)} instructions, {self.n_registers} "
                f"registers, {len(self.constants)} constants, {len(self.outputs)} outputs>")

    def stripped(self) -> Tape:
        """The tape without its program steps (small to pickle; prints without comments)."""
        return replace(self, steps=())


def _literal(text: str) -> float | None:
    if text in _SPECIAL_LITERALS:
        return _SPECIAL_LITERALS[text]
    try:
        return float(text)
    except ValueError:
        return None


def _small_int_exponent(text: str) -> int | None:
    # Mirrors the op table's pow template, so the same exponents become multiplications.
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() and 0 < abs(value) <= 4 else None


class _Builder:
    """Instructions over value ids: ``>= 0`` step values (virtual), ``< 0`` fixed registers."""

    def __init__(self, inputs: Sequence[str]) -> None:
        self.ids = {name: -(i + 1) for i, name in enumerate(inputs)}
        self.n_inputs = len(inputs)
        self.constants: list[float] = []
        self.constant_ids: dict[str, int] = {}
        self.code: list[tuple[int, int, int, int, int, int]] = []  # op, dst, a, b, c, step
        self.values = 0

    def new_value(self) -> int:
        self.values += 1
        return self.values - 1

    def constant(self, value: float) -> int:
        key = value.hex() if not math.isnan(value) else "nan"  # keeps -0.0 apart from 0.0
        if key not in self.constant_ids:
            self.constant_ids[key] = -(self.n_inputs + len(self.constants) + 1)
            self.constants.append(value)
        return self.constant_ids[key]

    def emit(self, op: int, dst: int, a: int, b: int, c: int, step: int) -> None:
        self.code.append((op, dst, a, b, c, step))

    def operand(self, text: str, step: int) -> tuple[int, bool]:
        """(value id, negated): identifiers, ``-identifier`` (a negation printed in a sum) or
        literals."""
        if text in self.ids:
            return self.ids[text], False
        if text.startswith("-") and text[1:] in self.ids:
            return self.ids[text[1:]], True
        value = _literal(text)
        if value is None:
            raise ValueError(f"unknown operand {text!r} in step {step}")
        return self.constant(value), False

    def plain(self, text: str, step: int) -> int:
        """An operand as a value id, materializing a negation where the op cannot absorb it."""
        value, negated = self.operand(text, step)
        if not negated:
            return value
        result = self.new_value()
        self.emit(NEG, result, value, value, value, step)
        return result

    def step(self, index: int, step: Step) -> None:
        operands = step.operands
        if step.op in _CHAINED:
            self.chain(index, step)
        elif step.op == "pow" and _small_int_exponent(operands[1]) is not None:
            self.small_power(index, step, _small_int_exponent(operands[1]))
        else:
            code = OPCODES.get(step.op)
            if code is None:
                raise NotImplementedError(f"the tape interpreter has no op {step.op!r}")
            args = [self.plain(text, index) for text in operands]
            args += [args[0]] * (3 - len(args))
            dst = self.new_value()
            self.emit(code, dst, args[0], args[1], args[2], index)
            self.ids[step.target] = dst

    def chain(self, index: int, step: Step) -> None:
        # Left to right, as Python evaluates `a + b - c + d`: the same rounding.
        code = _CHAINED[step.op]
        first, negated = self.operand(step.operands[0], index)
        if len(step.operands) == 1 and not negated:
            self.ids[step.target] = first  # a one-term sum is its term: no instruction
            return
        dst = self.new_value()
        if negated:
            self.emit(NEG, dst, first, first, first, index)
            first = dst
        for text in step.operands[1:]:
            value, negated = self.operand(text, index) if code == ADD else (
                self.plain(text, index), False)
            self.emit(SUB if negated else code, dst, first, value, value, index)
            first = dst
        self.ids[step.target] = dst

    def small_power(self, index: int, step: Step, k: int) -> None:
        # The pow template: x**3 is `x * x * x`, x**-2 is `1.0 / (x * x)`, x**-1 is `1.0 / x`.
        base = self.plain(step.operands[0], index)
        dst = self.new_value()
        product = base
        for _ in range(abs(k) - 1):
            self.emit(MUL, dst, product, base, base, index)
            product = dst
        if k < 0:
            one = self.constant(1.0)
            self.emit(DIV, dst, one, product, product, index)
        elif k == 1:
            self.emit(MUL, dst, base, self.constant(1.0), base, index)  # not produced by
            # schedule (x**1 simplifies), kept for completeness: x * 1.0 is x bit for bit.
        self.ids[step.target] = dst

    def output(self, text: str) -> int:
        return self.plain(text, -1)


def _allocate(code: list[tuple], outputs: list[int], n_values: int,
              n_fixed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Linear-scan register allocation; returns opcodes, operands, targets, output registers."""
    end = len(code)
    last = [-1] * n_values
    for i, (_, dst, a, b, c, _) in enumerate(code):
        last[dst] = i  # a chain writes its target several times
        for v in (a, b, c):
            if v >= 0:
                last[v] = i
    for v in outputs:
        if v >= 0:
            last[v] = end
    register = [-1] * n_values
    free: list[int] = []
    n_registers = n_fixed
    opcodes = np.empty(end, dtype=np.int32)
    operands = np.empty((end, 3), dtype=np.int32)
    targets = np.empty(end, dtype=np.int32)
    for i, (op, dst, a, b, c, _) in enumerate(code):
        row = [(-v - 1) if v < 0 else register[v] for v in (a, b, c)]
        # Operands dying here free their registers first: the interpreter reads before it
        # writes, so the result may take one of them (in-place update).
        for v in {a, b, c}:
            if v >= 0 and last[v] == i and v != dst:
                free.append(register[v])
        if register[dst] < 0:
            if free:
                register[dst] = free.pop()
            else:
                register[dst] = n_registers
                n_registers += 1
        if last[dst] == i:
            free.append(register[dst])  # written but never read: its register is free again
        opcodes[i] = op
        operands[i] = row
        targets[i] = register[dst]
    out = np.array([(-v - 1) if v < 0 else register[v] for v in outputs], dtype=np.int32)
    return opcodes, operands, targets, out, max(n_registers, 1)


def build_tape(program: Program) -> Tape:
    """The tape of one program; raises NotImplementedError for an op the interpreter lacks."""
    builder = _Builder(program.inputs)
    for index, step in enumerate(program.steps):
        builder.step(index, step)
    outputs = [builder.output(operand) for _, operand in program.outputs]
    n_fixed = builder.n_inputs + len(builder.constants)
    opcodes, operands, targets, out, n_registers = _allocate(builder.code, outputs,
                                                             builder.values, n_fixed)
    step_of = np.fromiter((entry[5] for entry in builder.code), dtype=np.int32,
                          count=len(builder.code))
    return Tape(program.name, tuple(program.inputs), tuple(label for label, _ in program.outputs),
                n_registers, opcodes, operands, targets,
                np.array(builder.constants, dtype=np.float64), out, step_of, program.steps)


def tape_text(tape: Tape) -> str:
    """The tape as readable steps, one line per instruction: ``r12 = sin(r3)    # t4``."""
    lines = [f"# tape {tape.name}: {tape.n_inputs} inputs, {len(tape.constants)} constants, "
             f"{tape.n_registers} registers, {len(tape.opcodes)} instructions, "
             f"{len(tape.outputs)} outputs"]
    lines += [f"r{i} = x[{i}]    # {comment_text(name, 60)}"
              for i, name in enumerate(tape.input_names)]
    lines += [f"r{tape.n_inputs + j} = {value!r}"
              for j, value in enumerate(tape.constants.tolist())]
    arity = {name: 2 if OPS[name].arity < 0 else OPS[name].arity for name in OP_NAMES
             if name in OPS}
    arity["sub"] = 2
    for op, row, target, step in zip(tape.opcodes.tolist(), tape.operands.tolist(),
                                     tape.targets.tolist(), tape.step_of.tolist()):
        name = INSTRUCTION_NAMES[op]
        args = ", ".join(f"r{r}" for r in row[:arity[name]])
        line = f"r{target} = {name}({args})"
        if tape.steps and step >= 0:
            s = tape.steps[step]
            note = f"{s.target}: {s.comment}" if s.comment else s.target
            line += f"    # {comment_text(note, 80)}"
        lines.append(line)
    lines += [f"out[{k}] = r{r}    # {comment_text(label, 60)}"
              for k, (label, r) in enumerate(zip(tape.output_labels, tape.outputs.tolist()))]
    return "\n".join(lines) + "\n"


def _row_kernel(tape: Tape):
    arrays, n, k = tape.arrays, tape.n_inputs, len(tape.outputs)

    def row(x, out) -> None:
        # One compiled signature for every call: C-contiguous float64 arrays (a tuple of floats
        # would make Numba compile again for each length).
        x = np.ascontiguousarray(x, dtype=np.float64)
        if x.shape != (n,) or np.shape(out) != (k,):
            raise ValueError(f"{tape.name}_row expects x of shape ({n},) and out of shape "
                             f"({k},), got {x.shape} and {np.shape(out)}")
        if _writable_c_float64(out):
            run_row(*arrays, x, out)
        else:
            result = np.empty(k)
            run_row(*arrays, x, result)
            out[...] = result

    row.__name__ = row.__qualname__ = f"{tape.name}_row"
    return row


def _batch_kernel(tape: Tape):
    arrays, n, k = tape.arrays, tape.n_inputs, len(tape.outputs)
    width = lane_width(tape.n_registers)

    def batch(X, OUT) -> None:
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != n or np.shape(OUT) != (X.shape[0], k):
            raise ValueError(f"{tape.name}_batch expects X of shape (N, {n}) and OUT of shape "
                             f"(N, {k}), got {X.shape} and {np.shape(OUT)}")
        if _writable_c_float64(OUT):
            run_batch(*arrays, X, OUT, _blocks(), width)
        else:
            result = np.empty((X.shape[0], k))
            run_batch(*arrays, X, result, _blocks(), width)
            OUT[...] = result

    batch.__name__ = batch.__qualname__ = f"{tape.name}_batch"
    return batch


def lane_width(n_registers: int) -> int:
    """Points a batch runs together: 4 to 32, keeping a thread's registers near 1 MB."""
    width = 32
    while width > 4 and n_registers * width > LANE_BUDGET:
        width //= 2
    return width


def _blocks() -> int:
    return 4 * numba.get_num_threads()  # a few blocks per thread: balance uneven rows


def _writable_c_float64(array) -> bool:
    return (isinstance(array, np.ndarray) and array.dtype == np.float64
            and array.flags.c_contiguous and array.flags.writeable)


class TapeModule:
    """What api.py needs from a generated module: ``<name>_row`` and ``<name>_batch`` for each
    program, ``source`` (the tapes as readable steps, printed on first access) and ``path``."""

    def __init__(self, tapes: Sequence[Tape], path: str | None = None) -> None:
        self.tapes = {tape.name: tape for tape in tapes}
        self.path = path
        self._source: str | None = None
        for tape in tapes:
            setattr(self, f"{tape.name}_row", _row_kernel(tape))
            setattr(self, f"{tape.name}_batch", _batch_kernel(tape))

    @property
    def source(self) -> str:
        if self._source is None:
            self._source = "\n".join(tape_text(t) for t in self.tapes.values())
        return self._source

    def __reduce__(self):
        # Pickles as its arrays (not the steps), so Dask workers rebuild it without the program.
        return (TapeModule, ([t.stripped() for t in self.tapes.values()], self.path))

    def __repr__(self) -> str:
        sizes = ", ".join(f"{n}: {len(t.opcodes)} instructions" for n, t in self.tapes.items())
        return f"<TapeModule {sizes}>"


def build_tape_module(programs: Sequence[Program]) -> TapeModule:
    """A drop-in for a generated module, running `programs` on the tape interpreter."""
    return TapeModule([build_tape(p) for p in programs])
