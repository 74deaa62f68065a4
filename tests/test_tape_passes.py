"""The tape's passes for speed keep the numbers bit for bit: `fuse` (two arithmetic
instructions made one) and the lanes' depth-first order (`module.lane_tape`).

Oracles: the same program's tape built without the pass, or in the clustered order (rows and
lanes, compared bit for bit, signs of zeros and nans included), and hand-made instruction rows
whose fusion, or refusal to fuse, is known.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import symgraph as sg
from symgraph.backends.tape import builder
from symgraph.backends.tape import module as tape_module
from symgraph.backends.tape.builder import TapeModule, _fused_forms, build_tape, lane_width
from symgraph.backends.tape.interpreter import interpreter_for
from symgraph.backends.tape.module import lane_tape
from symgraph.backends.tape.passes import fuse, tape_values
from symgraph.lower.programs import build_programs

from .strategies import expressions

VARIABLES = sg.symbols("x y z")
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -7.5, 1e300, -1e300, 1e-310, math.inf, -math.inf,
         math.nan]


def _tapes(expr, variables, monkeypatch):
    """(fused, unfused) tapes of value+gradient of `expr`."""
    program = build_programs([expr], variables, variables, True, False)[1]
    fused = build_tape(program)
    with monkeypatch.context() as patch:
        patch.setattr(builder, "fuse", lambda code, *_: code)
        unfused = build_tape(program)
    return fused, unfused


def _run(tape, X):
    """Every point of X on the row interpreter and on the lanes."""
    interpreter, k = tape.interpreter, len(tape.outputs)
    rows, lanes = np.empty((len(X), k)), np.empty((len(X), k))
    regs = np.empty(tape.n_registers + 2 * interpreter.max_block)
    for i, x in enumerate(X):
        interpreter.run_row(*tape.arrays, np.ascontiguousarray(x), rows[i], regs)
    width = min(lane_width(tape.n_registers), len(X))
    interpreter.run_batch(*tape.arrays, X, lanes, np.empty((tape.n_registers + 1, width)))
    return rows, lanes


def _same_bits(a, b) -> bool:
    return a.shape == b.shape and bool(np.all(
        (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))))


def _sums_products_and_differences(x, y, z):
    # chains (sums, products, differences), sums of products, c - a * b, a value used twice
    p = x * y * z * (x - 1.5) * (y + 0.25)
    s = x * y + y * z + z * x + 3.0 * x - y * y
    d = x - y - z - 2.0 * x * z
    return p * s + d * d - (x * z) * sg.exp(y) + sg.log(1 + x * x) * (z - x * y)


def test_fused_tapes_give_the_unfused_tapes_numbers_bit_for_bit_on_rows_and_lanes(monkeypatch):
    x, y, z = VARIABLES
    fused, unfused = _tapes(_sums_products_and_differences(x, y, z), [x, y, z], monkeypatch)
    assert len(fused.opcodes) < 0.8 * len(unfused.opcodes)
    rng = np.random.default_rng(7)
    edges = np.array(EDGES)
    X = np.concatenate([rng.uniform(-3, 3, (300, 3)), rng.choice(edges, (200, 3))])
    for got, want in zip(_run(fused, X), _run(unfused, X)):
        assert _same_bits(got, want)


ARITHMETIC = ("add", "mul", "neg", "div", "exp", "sin", "cos", "tanh", "log", "sqrt")


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(expressions(max_depth=6, ops=ARITHMETIC))
def test_fused_tapes_of_random_expressions_give_the_unfused_tapes_numbers(monkeypatch, expr):
    fused, unfused = _tapes(expr, list(VARIABLES), monkeypatch)
    X = np.random.default_rng(3).uniform(-2, 2, (40, 3))
    for got, want in zip(_run(fused, X), _run(unfused, X)):
        assert _same_bits(got, want)


# -- the pass on hand-made rows (op, dst, a, b, c, step) over value ids; inputs are -1, -2, ...


def _codes():
    return interpreter_for().codes


def _fused(rows, outputs, n_values):
    interpreter = interpreter_for()
    code = np.array([(op, d, a, b, b if c is None else c, k)
                     for k, (op, d, a, b, c) in enumerate(rows)], dtype=np.int64)
    return fuse(code, n_values, np.array(outputs, dtype=np.int64),
                _fused_forms(interpreter)).tolist()


def test_chains_and_sums_of_products_fuse_into_one_instruction_per_pair():
    c = _codes()
    x, y, z, w = -1, -2, -3, -4
    rows = [(c["mul"], 0, x, y, None), (c["mul"], 0, 0, z, None), (c["mul"], 0, 0, w, None),
            (c["mul"], 1, x, w, None),  # 1 = x * w
            (c["add"], 2, y, 1, None),  # 2 = y + (x * w): t on the right
            (c["sub"], 3, 2, z, None), (c["sub"], 3, 3, x, None),  # 3 = 2 - z - x
            (c["mul"], 4, y, z, None), (c["sub"], 5, 0, 4, None)]  # 5 = 0 - y * z
    got = _fused(rows, [0, 2, 3, 5], 6)
    assert [row[:5] for row in got] == [
        [c["mul3"], 0, x, y, z], [c["mul"], 0, 0, w, w],  # two links, then the third alone
        [c["muladd"], 2, x, w, y],  # 2 is an output, kept: its reader 5 fuses its own producer
        [c["sub3"], 3, 2, z, x],
        [c["mulsub"], 5, y, z, 0]]
    assert [row[5] for row in got] == [1, 2, 4, 6, 8]  # a fused row keeps its reader's step


def test_outputs_values_read_twice_or_by_ops_without_a_form_are_not_fused():
    c = _codes()
    x, y = -1, -2
    rows = [(c["mul"], 0, x, y, None), (c["add"], 1, 0, x, None),  # 0 is an output
            (c["add"], 2, x, y, None), (c["mul"], 3, 2, 2, None),  # (x + y) ** 2: t * t
            (c["add"], 4, x, y, None), (c["div"], 5, 4, y, None),  # no form for a division
            (c["sub"], 6, x, y, None), (c["sub"], 7, y, 6, None)]  # y - (x - y): t right
    got = _fused(rows, [0, 1, 3, 5, 7], 8)
    assert [row[0] for row in got] == [row[0] for row in rows]


def test_a_producer_whose_operand_is_rewritten_before_its_reader_stays_apart():
    c = _codes()
    x, y, z = -1, -2, -3
    rows = [(c["add"], 0, x, y, None),  # v0 = x + y
            (c["mul"], 1, 0, z, None),  # v1 = v0 * z, read only by the last row...
            (c["add"], 0, 0, z, None),  # ...but v0 is rewritten (a chain's next link) first
            (c["add"], 2, 1, x, None)]  # v2 = v1 + x
    got = _fused(rows, [0, 2], 3)
    assert [row[0] for row in got] == [c["add"], c["mul"], c["add"], c["add"]]
    rows[2] = (c["add"], 3, 0, z, None)  # no rewrite: v1 and v2 become one muladd
    got = _fused(rows, [3, 2], 4)
    assert [row[:5] for row in got][-1] == [c["muladd"], 2, 0, z, x]


@pytest.mark.parametrize("name", ["arrhenius@30", "cubic_eos@8", "student_t@40", "weibull@40"])
def test_fused_tapes_of_benchmark_families_give_the_unfused_numbers(monkeypatch, name):
    from benchmarks import families

    family, n = families.parse_name(name)
    expr, args = family.make(n)
    fused, unfused = _tapes(expr, args, monkeypatch)
    assert len(fused.opcodes) < len(unfused.opcodes)
    low, high = family.box(len(args))
    X = np.random.default_rng(5).uniform(low, high, (70, len(args)))
    for got, want in zip(_run(fused, X), _run(unfused, X)):
        assert _same_bits(got, want)


# -- the lanes' depth-first order ----------------------------------------------------------------


def _lanes(tape, X):
    out = np.empty((len(X), len(tape.outputs)))
    width = min(lane_width(tape.n_registers), len(X))
    tape.interpreter.run_batch(*tape.arrays, X, out, np.empty((tape.n_registers + 1, width)))
    return out


@pytest.mark.parametrize("name", ["cubic_eos@12", "arrhenius@40", "weibull@30", "mlp_loss@4"])
def test_depth_first_lanes_give_the_clustered_tapes_numbers_bit_for_bit(name):
    from benchmarks import families

    family, n = families.parse_name(name)
    expr, args = family.make(n)
    tape = build_tape(build_programs([expr], args, args, True, False)[1])
    deep = lane_tape(tape)
    assert sorted(deep.opcodes.tolist()) == sorted(tape.opcodes.tolist())  # reordered only
    low, high = family.box(len(args))
    X = np.random.default_rng(9).uniform(low, high, (150, len(args)))
    assert _same_bits(_lanes(deep, X), _lanes(tape, X))


def test_depth_first_order_keeps_fewer_values_live_on_a_sum_of_independent_terms():
    from benchmarks import families

    expr, args = families.FAMILIES["cubic_eos"].make(20)
    tape = build_tape(build_programs([expr], args, args, True, False)[1])
    assert lane_tape(tape).n_registers < 0.6 * tape.n_registers


def test_batches_past_the_depth_first_size_run_depth_first_with_the_same_numbers(monkeypatch):
    x, y, z = VARIABLES
    program = build_programs([_sums_products_and_differences(x, y, z)], [x, y, z], [x, y, z],
                             True, False)[1]
    X = np.random.default_rng(2).uniform(-2, 2, (300, 3))
    outs = []
    for size, share in ((1 << 40, 0.0), (0, 0.0)):  # clustered, then depth first
        monkeypatch.setattr(tape_module, "DEPTH_FIRST_BYTES", size)
        monkeypatch.setattr(tape_module, "DEPTH_FIRST_SHARE", share)
        called = []
        monkeypatch.setattr(tape_module, "lane_tape", lambda t, deep, called=called: (
            called.append(deep) or lane_tape(t, deep)))
        module = TapeModule([build_tape(program)])
        out = np.empty((len(X), 4))
        module.value_grad_batch(X, out)
        assert called == ([True] if size == 0 else [True, False])
        outs.append(out)
    assert _same_bits(outs[0], outs[1])


def test_a_tape_reading_a_register_before_any_write_is_not_reordered():
    add = _codes()["add"]
    opcodes, targets = np.array([add], np.int32), np.array([3], np.int32)
    operands = np.array([[0, 2, 2]], np.int32)  # r2 is a work register never written
    *_, ok = tape_values(opcodes, operands, targets, np.array([3], np.int32), 2, 4)
    assert not ok
    operands[0] = (0, 1, 1)  # inputs and constants only
    *_, ok = tape_values(opcodes, operands, targets, np.array([3], np.int32), 2, 4)
    assert ok


@pytest.mark.parametrize("name", ["arrhenius@60", "lennard_jones@8", "mlp_loss@4"])
def test_lane_tapes_keep_every_target_apart_from_its_operands_rows(name):
    # the lanes' loops vectorise only on rows apart (an in-place row runs a scalar loop)
    from benchmarks import families

    family, n = families.parse_name(name)
    expr, args = family.make(n)
    tape = build_tape(build_programs([expr], args, args, True, False)[1])
    assert np.any(tape.operands == tape.targets[:, None])  # the rows' tape updates in place
    for deep in (False, True):
        lanes = lane_tape(tape, deep)
        arity = np.array(lanes.interpreter.arities)[lanes.opcodes]
        for slot in range(3):
            read = arity > slot
            assert not np.any(lanes.operands[read, slot] == lanes.targets[read])


def test_freeing_instructions_first_keeps_fewer_values_live_with_the_same_numbers(monkeypatch):
    # arrhenius: df/dT, last of the outputs, reads every term's values; its sum's links free
    # them as soon as they run
    from benchmarks import families

    family, n = families.parse_name("arrhenius@60")
    expr, args = family.make(n)
    tape = build_tape(build_programs([expr], args, args, True, False)[1])
    few = lane_tape(tape)
    monkeypatch.setattr(tape_module, "FEW_LIVE", False)
    monkeypatch.setattr(tape_module, "BOTH_WAYS", False)
    plain = lane_tape(tape)
    assert few.n_registers < plain.n_registers - 20
    X = np.random.default_rng(4).uniform(*family.box(len(args)), (150, len(args)))
    assert _same_bits(_lanes(few, X), _lanes(plain, X))


def test_depth_first_from_the_outputs_in_reverse_is_kept_when_it_needs_fewer_registers(
        monkeypatch):
    from benchmarks import families

    family, n = families.parse_name("lennard_jones@8")
    expr, args = family.make(n)
    tape = build_tape(build_programs([expr], args, args, True, False)[1])
    both = lane_tape(tape)
    monkeypatch.setattr(tape_module, "BOTH_WAYS", False)
    forward = lane_tape(tape)
    assert both.n_registers < forward.n_registers
    X = np.random.default_rng(5).uniform(*family.box(len(args)), (150, len(args)))
    assert _same_bits(_lanes(both, X), _lanes(forward, X))
