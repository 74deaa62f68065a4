"""A program in integers, for the tape builder's `assemble` pass (`assemble.py`): each step a
kind (an opcode, or a chain, a negation, a small power, half of a sin/cos pair), each operand an
int (a step's index, an input, a distinct constant) and a sign, read from the scheduler's
`Encoding` (no Step is read: a `DeferredProgram` never makes them), or from the steps' names
for other programs. Then Numba builds the instructions: at 168,000 steps (the 50,000-node
DAG's gradient) encode takes ~0.016 s (0.036 s when it read the Steps), the whole tape
~0.08 s, where `builder._Builder`, one Python call per step, took ~0.3 s.

`encode` declines (returns None) a program it cannot take exactly as `_Builder` would, which
then builds it step by step, with its errors: a target named twice or after an input, an
operand naming no earlier step, an op the interpreter lacks, a step without operands.
"""

from __future__ import annotations

from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from ...ir.ops import small_power
from ...lower.schedule import CONST, NAME, Operand, Program, power_exponent
from .assemble import ADD_CHAIN, MUL_CHAIN, NEG_STEP, PAIRED, SINCOS_COS, SINCOS_SIN, SMALL_POWER
from .interpreter import Interpreter
from .opcodes import SINCOS

_TARGET, _OP, _OPERANDS = itemgetter(0), itemgetter(1), itemgetter(2)  # of a Step
_VALUE, _NEGATED = itemgetter(1), itemgetter(2)  # of an Operand
_POW, _REFUSED = -100, -101  # step kinds settled below, or left to the step-by-step builder


def constant_key(value: float) -> float | str:
    """What tells constants apart for a register (`_Builder.constant`'s rule): the value, but
    the two zeros apart and every nan one."""
    return value if value and value == value else "nan" if value != value else value.hex()


def _kinds_of(interpreter: Interpreter) -> dict[str, int]:
    kinds = getattr(interpreter, "_tape_step_kinds", None)
    if kinds is None:
        kinds = {name: code for name, code in interpreter.codes.items() if code != SINCOS}
        kinds.update(add=ADD_CHAIN, mul=MUL_CHAIN, neg=NEG_STEP, pow=_POW)
        interpreter._tape_step_kinds = kinds  # (an attribute: interpreters are few, kept)
    return kinds


def _distinct(refs: np.ndarray, n_inputs: int, constants: list[float]) -> tuple:
    """`refs` to constants (one per constant node) made refs to distinct ones, and those."""
    kid_of: dict = {}
    distinct: list[float] = []
    for value in constants:
        if kid_of.setdefault(constant_key(value), len(distinct)) == len(distinct):
            distinct.append(value)
    if len(distinct) < len(constants):
        kid = np.array([kid_of[constant_key(v)] for v in constants], dtype=np.int64)
        fixed = refs < -n_inputs
        refs[fixed] = -n_inputs - 1 - kid[-refs[fixed] - 1 - n_inputs]
    return refs, distinct


def _named(program: Program) -> tuple | None:
    """(refs, signs, constants) of a program without an `Encoding`: its names looked up."""
    steps, inputs = program.steps, program.inputs
    n = len(steps)
    index = dict(zip(map(_TARGET, steps), range(n)))
    if len(index) != n or len(set(inputs)) != len(inputs) or any(x in index for x in inputs):
        return None
    index.update((name, -i - 1) for i, name in enumerate(inputs))
    operands = list(chain.from_iterable(map(_OPERANDS, steps)))
    operands += [o for _, o in program.outputs]
    values = list(map(_VALUE, operands))
    # Names by one lookup each; a constant (no key) reads as nan, and is then given its index.
    refs = np.array(list(map(index.get, values)), dtype=np.float64)
    kid_of: dict = {}
    constants: list[float] = []
    base = -len(inputs) - 1

    def constant(value) -> int:
        k = kid_of.setdefault(constant_key(value), len(constants))
        if k == len(constants):
            constants.append(value)
        return base - k

    unnamed = np.flatnonzero(np.isnan(refs)).tolist()
    if any(operands[i][0] == NAME for i in unnamed):
        return None  # a name no step or input has
    refs[unnamed] = [constant(values[i]) for i in unnamed]
    signs = np.fromiter(map(_NEGATED, operands), dtype=np.bool_, count=len(operands))
    return refs.astype(np.int64), signs, constants


def encode(program: Program, interpreter: Interpreter) -> tuple[Any, ...] | None:
    """`assemble`'s arguments for `program`, and the distinct constants' values; or None."""
    inputs = program.inputs
    encoded = program.encoded
    if encoded is not None and encoded.ops is not None:  # made by the scheduler: no Step is read
        n = encoded.n_steps
        counts = np.frombuffer(encoded.counts, dtype=np.int64, count=n)
        ops = encoded.ops if len(encoded.ops) == n else encoded.ops[:n]
        m = int(counts.sum())
        words = np.empty(m + len(encoded.output_operands), dtype=np.int64)
        words[:m] = np.frombuffer(encoded.operands, dtype=np.int64, count=m)
        words[m:] = encoded.output_operands
        words -= encoded.offset
        refs, signs = words >> 1, (words & 1).astype(np.bool_)

        def operand(j: int, i: int):  # a key equal where the Operands are equal
            c = int(words[starts[j] + i])
            k = -(c >> 1) - len(inputs) - 1
            return Operand(CONST, encoded.constants[k]) if k >= 0 else c

        def exponent(j: int) -> int | None:  # `power_exponent` of step j
            k = -(int(words[starts[j] + 1]) >> 1) - len(inputs) - 1
            return small_power(encoded.constants[k]) if k >= 0 else None

        refs, constants = _distinct(refs, len(inputs), encoded.constants)
    else:
        steps = program.steps
        n = len(steps)
        counts = np.fromiter(map(len, map(_OPERANDS, steps)), dtype=np.int64, count=n)
        ops = list(map(_OP, steps))
        found = _named(program)
        if found is None:
            return None
        refs, signs, constants = found

        def operand(j: int, i: int):
            return steps[j][2][i]

        def exponent(j: int) -> int | None:
            return power_exponent(steps[j])

    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    kinds_of = _kinds_of(interpreter)
    kinds = np.fromiter(map(kinds_of.get, ops, repeat(_REFUSED, n)), dtype=np.int64, count=n)
    aux = np.zeros(n, dtype=np.int64)
    if n and (counts.min() < 1 or kinds.min() == _REFUSED or (
            counts[kinds >= 0].max(initial=0) > 3) or np.any(counts[kinds == NEG_STEP] > 1)):
        return None
    one = -1
    kid_of = {constant_key(value): k for k, value in enumerate(constants)} if np.any(
        kinds == _POW) else {}
    for j in np.flatnonzero(kinds == _POW).tolist():
        k = exponent(j) if counts[j] == 2 else None
        if k is not None:
            kinds[j], aux[j] = SMALL_POWER, k
            if one < 0:  # the index of 1.0 (`x**-k` is 1.0 / x**k), a new one if none
                one = kid_of.setdefault(1.0, len(constants))
                if one == len(constants):
                    constants = [*constants, 1.0]
        elif "pow" in interpreter.codes and counts[j] <= 3:
            kinds[j] = interpreter.codes["pow"]
        else:
            return None
    codes = interpreter.codes
    if "sin" in codes and "cos" in codes:  # sin(u) and cos(u): one SINCOS (`_sin_cos_pairs`)
        first: dict = {}
        for j in np.flatnonzero((kinds == codes["sin"]) | (kinds == codes["cos"])).tolist():
            if counts[j] != 1:
                return None
            op, key = ops[j], operand(j, 0)
            other = first.get(("cos" if op == "sin" else "sin", key))
            if other is None:
                first[(op, key)] = j
                continue
            if kinds[other] < 0:  # a third of one operand: `_sin_cos_pairs` would re-pair
                return None
            kinds[other] = SINCOS_COS if op == "sin" else SINCOS_SIN
            kinds[j], aux[other] = PAIRED, j
    structural = np.array([codes[name] for name in ("add", "mul", "neg", "div")],
                          dtype=np.int64)
    return ((kinds, aux, starts, refs, signs, len(inputs), len(constants), max(one, 0),
             structural), constants)
