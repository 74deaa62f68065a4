"""Tape kernels: programs as instruction arrays for the one cached interpreter.

A straight-line kernel costs Numba/LLVM compile time that grows faster than its length (minutes
at 10^5 steps). A tape costs none: each `Program` becomes a few NumPy arrays that the
interpreter of the op table (`symgraph.backends.tape.interpreter`, compiled once per machine)
runs as they are; a tape keeps the interpreter it was built for.

    module = build_tape_module(programs)      # drop-in for a generated module
    module.value_grad_row(x, out)             # x: (n,) floats, out: (k,)
    module.value_grad_batch(X, OUT)           # X: (N, n), OUT: (N, k), rows in parallel
    print(module.source)                      # the tape as readable steps

Building a tape: the program in integers (`encode.py`: the scheduler's `Encoding` of its
operands, else its names looked up once) goes to a Numba pass (`assemble.py`) that makes the
instructions by the rules of `_Builder` below (which makes them one Python call per step, for
programs `encode` declines, and as the tests' reference; 50,001-node DAG's gradient, 168,000
steps: 0.3 s that way, 0.1 s the tape in all). n-ary sums and products become chains of binary
instructions evaluated left to right, and ``x**k`` for a literal integer ``0 < |k| <= 4``
becomes multiplications: the same arithmetic, in the same order, as the straight-line kernels,
so results are equal bit for bit (but for the vector ops, which use vecmath: see
`symgraph.backends.tape.interpreter`). Pairs of arithmetic instructions where the second
alone reads the first's result become one instruction on three operands (`fuse`: a*b + c,
(a+b)+c, (a*b)*c, (a-b)-c, c - a*b; the same operations in the same order, so the same numbers
bit for bit): value+grad of the families at ~3,000 ops take 25-50% fewer instructions
(arrhenius@993 29,634 -> 19,520, cubic_eos@74 25,577 -> 13,000), the 50,000-node DAG's
197,208 -> 132,800, its 1-point row 0.81 -> 0.65 ms (load 7). The instructions are then
reordered so that equal ops run back to back where dependencies allow (`cluster_order`),
registers are assigned by a linear scan (`linear_scan`): ``[inputs | constants | work]``, a
value takes a free register at its first write and gives it back after its last use, so the
file holds the live values, not the steps; and the runs of one op are cut into the
interpreter's blocks (`split_blocks`). (A batch with a big register file runs a depth-first
copy instead: `module.lane_tape`.) The passes (`passes.py`) are Numba functions (cached), so a
10^6-instruction tape builds in seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...ir.traversal import bulk
from ...lower.schedule import CONST, NAME, Operand, Program, Step, power_exponent, steps_view
from ..numba.cache import preload
from .assemble import ASSEMBLED, assemble
from .choice import STRATEGIES, TAPE_THRESHOLD_OPS, choose_strategy
from .encode import encode
from .interpreter import Interpreter, interpreter_for, refusal
from .module import LANE_BUDGET, Tape, TapeModule, lane_tape, lane_width, tape_text
from .opcodes import FUSED, NMUL, SINCOS, SUB
from .passes import (
    cluster_order,
    depth_first_order,
    fuse,
    linear_scan,
    split_blocks,
    tape_values,
)
from .pressure import few_live_order

__all__ = ["LANE_BUDGET", "STRATEGIES", "TAPE_THRESHOLD_OPS", "Tape", "TapeModule", "build_tape",
           "build_tape_module", "check_tape_ops", "choose_strategy", "lane_width",
           "lanes_beat_rows", "tape_text"]



class _Builder:
    """Instructions over value ids: ``>= 0`` step values (virtual), ``< 0`` fixed registers."""

    def __init__(self, inputs: Sequence[str], interpreter: Interpreter) -> None:
        self.codes = interpreter.codes
        self.add, self.mul, self.neg, self.div = (self.codes[name]
                                                  for name in ("add", "mul", "neg", "div"))
        self.ids = {name: -(i + 1) for i, name in enumerate(inputs)}
        self.n_inputs = len(inputs)
        self.constants: list[float] = []
        self.constant_ids: dict[str, int] = {}
        self.by_value: dict[float, int] = {}  # nonzero, non-nan constants: value -> register
        self.code: list[tuple[int, int, int, int, int, int]] = []  # op, dst, a, b, c, step
        self.values = 0
        # A negation step is no instruction: its name stands for its operand, negated. Sums
        # absorb it (SUB), products too (NMUL); other ops get one NEG per value, on first use.
        self.negations: dict[str, int] = {}
        self.negated: dict[int, int] = {}
        # sin(u) and cos(u) of one operand (a value and its derivative): one SINCOS instruction
        self.sin_cos_pairs: dict[int, tuple[str, str]] = {}

    def new_value(self) -> int:
        self.values += 1
        return self.values - 1

    def constant(self, value: float) -> int:
        if value:  # neither zero (0.0 == -0.0 as keys): the register by value, at once
            found = self.by_value.get(value)
            if found is not None:
                return found
        key = value.hex() if not math.isnan(value) else "nan"  # keeps -0.0 apart from 0.0
        if key not in self.constant_ids:
            self.constant_ids[key] = -(self.n_inputs + len(self.constants) + 1)
            self.constants.append(value)
        if value and value == value:  # a nan is found by its key alone
            self.by_value[value] = self.constant_ids[key]
        return self.constant_ids[key]

    def emit(self, op: int, dst: int, a: int, b: int, c: int, step: int) -> None:
        self.code.append((op, dst, a, b, c, step))

    def operand(self, operand: Operand, step: int) -> tuple[int, bool]:
        """(value id, negated) of a name (perhaps negated: a negation inlined into a sum) or a
        constant."""
        if operand.kind == CONST:
            return self.constant(operand.value), False
        name, sign = operand.value, operand.negated
        if name in self.ids:
            return self.ids[name], sign
        if name in self.negations:
            return self.negations[name], not sign
        raise ValueError(f"unknown operand {name!r} in step {step}")

    def plain(self, operand: Operand, step: int) -> int:
        """An operand as a value id, materializing a negation where the op cannot absorb it."""
        value, negated = self.operand(operand, step)
        if not negated:
            return value
        if value not in self.negated:
            self.negated[value] = self.new_value()
            self.emit(self.neg, self.negated[value], value, value, value, step)
        return self.negated[value]

    def step(self, index: int, step: Step) -> None:
        operands = step.operands
        if step.target in self.ids:  # the cos (or sin) of a SINCOS pair already emitted
            return
        if index in self.sin_cos_pairs:
            sin_target, cos_target = self.sin_cos_pairs[index]
            value = self.plain(operands[0], index)
            self.ids[sin_target], self.ids[cos_target] = self.new_value(), self.new_value()
            self.emit(SINCOS, self.ids[sin_target], value, value, self.ids[cos_target], index)
            return
        if step.op == "neg":
            value, negated = self.operand(operands[0], index)
            if negated:  # -(-x) is x
                self.ids[step.target] = value
            else:
                self.negations[step.target] = value
        elif step.op in ("add", "mul"):
            self.chain(index, step)
        elif step.op == "pow" and (k := power_exponent(step)) is not None:
            self.small_power(index, step, k)  # the multiplications of the op table's template
        else:
            code = self.codes.get(step.op)
            if code is None or code == SINCOS or len(operands) > 3:
                why = refusal(step.op)
                raise NotImplementedError(f"the tape interpreter has no op {step.op!r}"
                                          + (f" ({why})" if why else ""))
            args = [self.plain(operand, index) for operand in operands]
            args += [args[0]] * (3 - len(args))
            dst = self.new_value()
            self.emit(code, dst, args[0], args[1], args[2], index)
            self.ids[step.target] = dst

    def chain(self, index: int, step: Step) -> None:
        # Left to right, as Python evaluates `a + b - c + d`: the same rounding. (`operand`
        # inlined: chains are most of a program's steps.)
        ids, operands = self.ids, step.operands
        if len(operands) == 2:  # most chains: two operands (the general case below, unrolled)
            (kind_a, a, sign_a), (kind_b, b, sign_b) = operands
            if kind_a == NAME:
                a = ids.get(a)
                if a is None:
                    a = self.negations.get(operands[0].value)
                    sign_a = not sign_a
            else:
                a = self.constant(a)
            if kind_b == NAME:
                b = ids.get(b)
                if b is None:
                    b = self.negations.get(operands[1].value)
                    sign_b = not sign_b
            else:
                b = self.constant(b)
            if a is not None and b is not None:
                dst = self.values
                self.values += 1
                emit = self.code.append
                if step.op == "mul":  # a negated factor sets the sign, applied by the link
                    emit((NMUL if sign_a != sign_b else self.mul, dst, a, b, b, index))
                elif not sign_a:  # a + b, a - b
                    emit((SUB if sign_b else self.add, dst, a, b, b, index))
                elif not sign_b:  # -a + b is b - a bit for bit
                    emit((SUB, dst, b, a, a, index))
                else:  # -a - b
                    emit((self.neg, dst, a, a, a, index))
                    emit((SUB, dst, dst, b, b, index))
                ids[step.target] = dst
                return
        negations, terms = self.negations, []
        for kind, name, sign in operands:
            if kind == CONST:
                terms.append((self.constant(name), False))
            elif (value := ids.get(name)) is not None:
                terms.append((value, sign))
            elif (value := negations.get(name)) is not None:
                terms.append((value, not sign))
            else:
                raise ValueError(f"unknown operand {name!r} in step {index}")
        first, negated = terms[0]
        if len(terms) == 1 and not negated:
            ids[step.target] = first  # a one-term sum is its term: no instruction
            return
        dst = self.values
        self.values += 1
        emit = self.code.append
        if step.op == "mul" and len(terms) > 1:
            # Negated factors only set the sign, which the last link applies.
            odd = sum(negated for _, negated in terms) % 2
            mul, last = self.mul, len(terms) - 1
            for k in range(1, len(terms)):
                value = terms[k][0]
                emit((NMUL if odd and k == last else mul, dst, first, value, value, index))
                first = dst
            ids[step.target] = dst
            return
        if negated and len(terms) > 1 and not terms[1][1]:
            # -a + b is b - a bit for bit (addition commutes exactly).
            terms = [(terms[1][0], False), (first, True)] + terms[2:]
            first, negated = terms[0]
        if negated:
            emit((self.neg, dst, first, first, first, index))
            first = dst
        code = self.codes[step.op]
        for k in range(1, len(terms)):
            value, negated = terms[k]
            emit((SUB if negated else code, dst, first, value, value, index))
            first = dst
        ids[step.target] = dst

    def small_power(self, index: int, step: Step, k: int) -> None:
        # The pow template: x**3 is `x * x * x`, x**-2 is `1.0 / (x * x)`, x**-1 is `1.0 / x`.
        base = self.plain(step.operands[0], index)
        dst = self.new_value()
        product = base
        for _ in range(abs(k) - 1):
            self.emit(self.mul, dst, product, base, base, index)
            product = dst
        if k < 0:
            one = self.constant(1.0)
            self.emit(self.div, dst, one, product, product, index)
        elif k == 1:
            self.emit(self.mul, dst, base, self.constant(1.0), base, index)  # not produced by
            # schedule (x**1 simplifies), kept for completeness: x * 1.0 is x bit for bit.
        self.ids[step.target] = dst

    def output(self, operand: Operand) -> int:
        return self.plain(operand, -1)


_CHAINS = frozenset(("add", "mul"))


def _sin_cos_pairs(steps: Sequence[Step]) -> dict[int, tuple[str, str]]:
    """For each sin(u)/cos(u) pair of the same operand: the index of its first step -> (the sin
    step's target, the cos step's target)."""
    first: dict[tuple[str, Operand], tuple[int, str]] = {}
    pairs: dict[int, tuple[str, str]] = {}
    for index, step in enumerate(steps):
        if step.op in ("sin", "cos"):
            other = first.get(("cos" if step.op == "sin" else "sin", step.operands[0]))
            if other is None:
                first[(step.op, step.operands[0])] = (index, step.target)
                continue
            at, target = other
            pairs[at] = (step.target, target) if step.op == "sin" else (target, step.target)
    return pairs


def check_tape_ops(program: Program, interpreter: Interpreter | None = None) -> None:
    """Raise the NotImplementedError `build_tape` would for an op the interpreter lacks,
    without building (a few ms at 10^5 steps: a deferred tape refuses at once)."""
    codes = (interpreter or interpreter_for()).codes
    census = program.census
    for op, arity in sorted({(op, n) for op, n, _ in census}):
        if op in _CHAINS or op == "neg" or (op == "pow" and "pow" not in codes and all(
                k is not None for o, _, k in census if o == "pow")):
            continue  # no instruction of their own (small powers: multiplications)
        code = codes.get(op)
        if code is None or code == SINCOS or arity > 3:
            why = refusal(op)
            raise NotImplementedError(f"the tape interpreter has no op {op!r}"
                                      + (f" ({why})" if why else ""))


def build_tape(program: Program, interpreter: Interpreter | None = None) -> Tape:
    """The tape of one program, for `interpreter` (default: the op table's as it is now);
    raises NotImplementedError for an op the interpreter lacks."""
    interpreter = interpreter or interpreter_for()
    preload([assemble, fuse, cluster_order, linear_scan, split_blocks])  # from Numba's cache
    encoded = encode(program, interpreter)
    code = None
    if encoded is not None:  # the steps in integers, assembled by Numba (the same rows)
        arguments, distinct = encoded
        code, n_values, order, outputs, status = assemble(*arguments)
        constants = [distinct[k] for k in order.tolist()]
    if code is None or status != ASSEMBLED:  # the rest (or to raise its error): step by step
        code, n_values, constants, outputs = _stepwise(program, interpreter)
    return _finished(program, interpreter, code, n_values, constants, outputs)


def _stepwise(program: Program, interpreter: Interpreter) -> tuple:
    """`assemble`'s rows, values, constants and outputs, made one step at a time in Python."""
    builder = _Builder(program.inputs, interpreter)
    builder.sin_cos_pairs = _sin_cos_pairs(program.steps)
    chain, other, ids = builder.chain, builder.step, builder.ids
    add, mul, emit = builder.add, builder.mul, builder.code.append
    for index, step in enumerate(program.steps):
        target, op, operands, _ = step
        if op in _CHAINS and target not in ids:
            if len(operands) == 2:  # `chain`'s commonest case inlined: a op b, two names
                (kind_a, a, sign_a), (kind_b, b, sign_b) = operands
                if kind_a == NAME and kind_b == NAME and not (sign_a or sign_b):
                    a, b = ids.get(a), ids.get(b)
                    if a is not None and b is not None:
                        dst = builder.values
                        builder.values = dst + 1
                        emit((mul if op == "mul" else add, dst, a, b, b, index))
                        ids[target] = dst
                        continue
            chain(index, step)
        else:
            other(index, step)
    outputs = np.array([builder.output(operand) for _, operand in program.outputs],
                       dtype=np.int64)
    code = np.array(builder.code, dtype=np.int64).reshape(-1, 6)
    return code, builder.values, builder.constants, outputs


def _finished(program: Program, interpreter: Interpreter, code: np.ndarray, n_values: int,
              constants: list[float], outputs: np.ndarray) -> Tape:
    """The tape of the builder's rows: clustered, registers assigned, cut into blocks."""
    n_fixed = len(program.inputs) + len(constants)
    code = fuse(code, n_values, outputs, _fused_forms(interpreter))
    code = code[cluster_order(code, n_values, len(interpreter.names))]
    rows, out, n_registers = linear_scan(code, outputs, n_values, n_fixed, 0)
    opcodes, targets = rows[:, 0].copy(), rows[:, 1].copy()
    operands, step_of = np.ascontiguousarray(rows[:, 2:]), code[:, 5].astype(np.int32)
    blocks = split_blocks(opcodes, operands, targets, n_registers, interpreter.vector,
                          interpreter.max_block)
    return Tape(program.name, tuple(program.inputs), tuple(label for label, _ in program.outputs),
                n_registers, opcodes, operands, targets, blocks,
                np.array(constants, dtype=np.float64), out, step_of, steps_view(program),
                interpreter)


def _fused_forms(interpreter: Interpreter) -> np.ndarray:
    """`fuse`'s table for `interpreter`: (fused code, producer code, consumer code, sides)."""
    forms = getattr(interpreter, "_tape_fused_forms", None)
    if forms is None:
        codes = interpreter.codes
        forms = np.array([(codes[name], codes[producer], codes[consumer], sides)
                          for name, _, producer, consumer, sides in FUSED], dtype=np.int64)
        interpreter._tape_fused_forms = forms  # (an attribute: interpreters are few, kept)
    return forms


# Per point and one thread, measured on the suite (x86-64, AVX-512): a loop over a straight-line
# row kernel costs ~0.17 ns per arithmetic operation (values stay in CPU registers) and ~12 ns
# per libm call; the tape's lanes ~0.38 ns per instruction (register rows stream through the
# cache) and ~2.5 ns per vector-op value (symgraph.vecmath). Calls without a vector form cost
# the same either way.
ROW_NS_PER_OP, ROW_NS_PER_CALL = 0.17, 12.0
LANE_NS_PER_INSTRUCTION, LANE_NS_PER_VECTOR_CALL = 0.38, 2.5


def lanes_beat_rows(program: Program) -> bool:
    """Whether a batch of `program` runs faster on the tape's lanes than as a loop over its
    straight-line row kernel: when enough of it is exp/log/sin/cos/tanh/erf..., which the
    lanes compute in SIMD and the row kernel in scalar libm calls (MLP losses, deep nests)."""
    interpreter = interpreter_for()
    names = {name for name, vector in zip(interpreter.names, interpreter.vector) if vector}
    vector = sum(count for (op, _, _), count in program.census.items() if op in names)
    ops = program.op_count
    row = ROW_NS_PER_OP * (ops - vector) + ROW_NS_PER_CALL * vector
    lanes = LANE_NS_PER_INSTRUCTION * ops + LANE_NS_PER_VECTOR_CALL * vector
    return lanes < row


@bulk
def build_tape_module(programs: Sequence[Program]) -> TapeModule:
    """A drop-in for a generated module, running `programs` on the tape interpreter."""
    return TapeModule([build_tape(p) for p in programs])


def precompile() -> int:
    """Compile the tape's Numba code (the build passes and the interpreter's entry points, for
    the argument types symgraph passes them) into Numba's on-disk cache now, so that no tape on
    this machine waits for it: ~10 s, once per machine, Numba and symgraph version (the first
    tape would pay it otherwise). Returns how many functions it compiled (0: all cached)."""
    interpreter = interpreter_for()
    entry_points = (assemble, fuse, cluster_order, linear_scan, split_blocks, tape_values,
                    depth_first_order, few_live_order, interpreter.run_row,
                    interpreter.run_batch, interpreter.run_points)
    preload(entry_points)
    before = sum(sum(f.stats.cache_misses.values()) for f in entry_points)
    a, b, t0, t1, t2, f = (Operand(NAME, name) for name in ("a", "b", "t0", "t1", "t2", "f"))
    steps = (Step("t0", "sin", (a,)), Step("t1", "cos", (a,)), Step("t2", "mul", (t0, b)),
             Step("f", "add", (t2, t1)))
    tape = build_tape(Program("value", ("a", "b"), steps, (("f", f),)))
    module = TapeModule([tape])
    X, OUT = np.ones((3, 2)), np.empty((3, 1))
    module.value_row(X[0], OUT[0])
    module.value_batch(X, OUT)  # lanes
    lane_tape(tape)  # (big batches' depth-first copy)
    interpreter.run_points(*tape.arrays, X, OUT,
                           np.empty(tape.n_registers + 2 * interpreter.max_block))
    return sum(sum(f.stats.cache_misses.values()) for f in entry_points) - before

