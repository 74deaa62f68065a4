"""Immediate instructions (a constant operand read as a number on a batch's lanes,
`symgraph.backends.tape.immediate`) keep the numbers bit for bit.

Oracles: the same tape without them, on the lanes and on the rows (signs of zeros and nans
included, edge values as inputs and as constants), and hand-made tapes with every form.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import symgraph as sg
from symgraph.backends.tape import module as tape_module
from symgraph.backends.tape.builder import TapeModule, build_tape, lane_width
from symgraph.backends.tape.interpreter import interpreter_for
from symgraph.backends.tape.module import Tape, lane_tape, with_immediates
from symgraph.backends.tape.opcodes import IMMEDIATE
from symgraph.backends.tape.passes import split_blocks
from symgraph.lower.programs import build_programs

from .strategies import expressions

pytestmark = pytest.mark.numba  # every test runs the tape's Numba passes or lanes

EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -7.5, 1e300, -1e300, 1e-310, math.inf, -math.inf,
         math.nan]


def _lanes(tape, X, width=None):
    out = np.empty((len(X), len(tape.outputs)))
    width = width or min(lane_width(tape.n_registers), len(X))
    tape.interpreter.run_batch(*tape.arrays, X, out, np.empty((tape.n_registers + 1, width)))
    return out


def _rows(tape, X):
    out = np.empty((len(X), len(tape.outputs)))
    regs = np.empty(tape.n_registers + 2 * tape.interpreter.max_block)
    for i, x in enumerate(X):
        tape.interpreter.run_row(*tape.arrays, np.ascontiguousarray(x), out[i], regs)
    return out


def _same_bits(a, b) -> bool:
    return a.shape == b.shape and bool(np.all(
        (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))))


def _immediates(tape) -> int:
    return int(np.sum(tape.interpreter.immediate[tape.opcodes] >= 0))


def _points(low, high, n_args, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(low, high, (200, n_args))
    X[150:] = rng.choice(np.array(EDGES), (50, n_args))  # zeros of both signs, infs, nans
    return X


@pytest.mark.parametrize("name", ["arrhenius@40", "cubic_eos@12", "gauss_loglik@30",
                                  "mlp_loss@4", "lennard_jones@6", "weibull@20"])
def test_immediate_lanes_give_the_plain_lanes_and_rows_numbers_bit_for_bit(name):
    from benchmarks import families

    family, n = families.parse_name(name)
    expr, args = family.make(n)
    tape = lane_tape(build_tape(build_programs([expr], args, args, True, False)[1]))
    fast = with_immediates(tape)
    assert _immediates(fast) > 0.05 * len(tape.opcodes)
    X = _points(*family.box(len(args)), len(args), 4)
    want = _lanes(tape, X)
    assert _same_bits(_lanes(fast, X), want)
    assert _same_bits(_lanes(fast, X, 24), want)  # lanes not a multiple of the SIMD width
    assert _same_bits(_rows(fast, X), _rows(tape, X))  # rows run them as their base


def _every_form_tape() -> Tape:
    """Inputs x, y (r0, r1); constants r2.. (edge values among them); one instruction per
    (base, constant slot) of every immediate form, the constant in each slot, each into its
    own register, all outputs."""
    interpreter = interpreter_for()
    codes, arities = interpreter.codes, interpreter.arities
    constants = [2.5, -0.0, 0.0, math.inf, -3.0, 1e-310]
    rows = []
    for _, base, _ in IMMEDIATE:
        arity = arities[codes[base]]
        for slot in range(arity):
            for k in range(len(constants)):
                regs = [0, 1, 0][:arity]
                regs[slot] = 2 + k
                if arity == 2:
                    regs.append(regs[0])
                rows.append((codes[base], *regs))
    n_fixed = 2 + len(constants)
    opcodes = np.array([r[0] for r in rows], np.int32)
    operands = np.array([r[1:] for r in rows], np.int32)
    targets = np.arange(n_fixed, n_fixed + len(rows), dtype=np.int32)
    n_registers = n_fixed + len(rows)
    blocks = split_blocks(opcodes, operands, targets, n_registers, interpreter.vector,
                          interpreter.max_block)
    return Tape("forms", ("x", "y"), tuple(f"o{i}" for i in range(len(rows))), n_registers,
                opcodes, operands, targets, blocks, np.array(constants), targets.copy(),
                np.arange(len(rows), dtype=np.int32))


def test_every_immediate_form_is_made_and_gives_its_bases_numbers_on_edge_values():
    tape = _every_form_tape()
    fast = with_immediates(tape)
    names = {tape.interpreter.names[op] for op in fast.opcodes.tolist()}
    assert {name for name, *_ in IMMEDIATE} <= names
    edges = np.array(EDGES)
    X = np.array([(a, b) for a in edges for b in edges])
    want = _lanes(tape, X)
    assert _same_bits(_lanes(fast, X), want)
    assert _same_bits(_rows(fast, X), _rows(tape, X))


def test_a_tape_without_constant_operands_is_kept_as_it_is():
    x, y = sg.symbols("x y")
    tape = build_tape(build_programs([x * y + sg.sin(x)], [x, y], [x, y], True, False)[1])
    assert with_immediates(tape) is tape


def test_an_immediate_instruction_on_a_work_register_is_refused():
    fast = with_immediates(_every_form_tape())
    operands = fast.operands.copy()
    i = int(np.flatnonzero(fast.interpreter.immediate[fast.opcodes] == 0)[0])
    operands[i, 0] = 1  # the input y: the lanes would index the constants with -1
    with pytest.raises(ValueError, match="immediate"):
        Tape(fast.name, fast.input_names, fast.output_labels, fast.n_registers, fast.opcodes,
             operands, fast.targets, fast.blocks, fast.constants, fast.outputs, fast.step_of)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(expressions(max_depth=6, ops=("add", "mul", "neg", "div", "exp", "sin", "log", "sqrt")))
def test_immediate_lanes_of_random_expressions_give_the_plain_lanes_numbers(expr):
    variables = list(sg.symbols("x y z"))
    tape = build_tape(build_programs([expr], variables, variables, True, False)[1])
    X = _points(-2, 2, 3, 6)
    assert _same_bits(_lanes(with_immediates(tape), X), _lanes(tape, X))


def test_batches_run_their_lanes_with_immediates_and_the_same_numbers(monkeypatch):
    x, y, z = sg.symbols("x y z")
    expr = 2.5 * x * y + 3.0 / z - 0.5 * x * z * y + (1.5 - x * y) * (x + 4.0)
    program = build_programs([expr], [x, y, z], [x, y, z], True, False)[1]
    X = _points(-2, 2, 3, 8)
    outs = []
    for on in (False, True):
        monkeypatch.setattr(tape_module, "IMMEDIATES", on)
        module = TapeModule([build_tape(program)])
        out = np.empty((len(X), 4))
        module.value_grad_batch(X, out)
        outs.append(out)
    assert _same_bits(outs[0], outs[1])
