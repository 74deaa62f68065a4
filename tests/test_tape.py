"""Tape kernels: every op, the straight-line kernels' numbers, small register files, big inputs.

Oracles: the op table's NumPy `evaluate`, the straight-line Numba kernels (the tape runs the same
arithmetic in the same order, so the numbers are equal bit for bit, except where the tape's
vector ops use symgraph.backends.numba.vecmath: within an ulp of libm), the Python backend, and
`graph.evaluate`.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import pickle
import random
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symgraph as sg
from symgraph.backends.numba import batch as numba_batch
from symgraph.backends.numba import vecmath
from symgraph.backends.numba.batch import uses_lanes
from symgraph.backends.python import emit_python
from symgraph.backends.tape import module as tape_module
from symgraph.backends.tape.builder import (
    LANE_BUDGET,
    TAPE_THRESHOLD_OPS,
    TapeModule,
    build_tape,
    build_tape_module,
    check_tape_ops,
    choose_strategy,
    lane_width,
    lanes_beat_rows,
)
from symgraph.backends.tape.interpreter import MAX_BLOCK, interpreter_for
from symgraph.backends.tape.opcodes import SINCOS, TAPE_ONLY, instruction_set
from symgraph.ir.cuberoot import cbrt
from symgraph.ir.evaluate import count_ops
from symgraph.ir.node import apply
from symgraph.ir.ops import OPS
from symgraph.lower.programs import build_programs
from symgraph.lower.schedule import CONST, NAME, Operand, Program, Step

from .corpus import CORPUS
from .strategies import expressions, points
from .test_numpy_semantics import EDGE_CASES

VARIABLES = sg.symbols("x y z")
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -7.5, 1e300, -1e300, 1e-310, math.inf, -math.inf,
         math.nan]
# Smaller versions of the corpus's slow-to-compile entries (Numba compile time, not the tape).
CORPUS_ARGS = {"nested": (60,), "random_dag": (400,), "product_chain": (40,)}


def _same(actual, expected) -> None:
    """Equal bit for bit up to the sign of a nan (and -0.0 == 0.0 is not enough: check it)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    both_nan = np.isnan(actual) & np.isnan(expected)
    same = (actual == expected) & (np.signbit(actual) == np.signbit(expected))
    bad = ~(both_nan | same)
    assert not bad.any(), (actual[bad], expected[bad])


STANDARD = interpreter_for()  # the op table as shipped (no test registered an op yet)
VECTOR_CODES = {code for code, vector in enumerate(STANDARD.vector.tolist()) if vector}
VECTOR_OPS = {STANDARD.names[code] for code in VECTOR_CODES}


VECMATH = vecmath.NAMES
# Two-operand ops the lanes run with vecmath (vpow, vatan2, vhypot), one point with libm.
_SET = instruction_set(OPS, VECMATH)
LANE_VECMATH_OPS = {name for name, form in _SET.lanes.items()
                    if form.loop != _SET.scalar[_SET.codes[name]]}


def _rows_and_lanes_agree(rows, batch, programs) -> None:
    """Bit for bit, but where a lane runs vecmath the point path runs libm on: both within an
    ulp of the true value, so neighbours at most there (specials equal), spread by what follows."""
    if not any(step.op in LANE_VECMATH_OPS for p in programs for step in p.steps):
        _same(rows, batch)
        return
    rows, batch = np.atleast_2d(rows), np.atleast_2d(batch)
    special = ~np.isfinite(rows) | (rows == 0.0)
    _same(batch[special], rows[special])
    if len(programs) == 1 and len(programs[0].steps) == 1:  # one op: an ulp at most
        np.testing.assert_array_max_ulp(batch[~special], rows[~special], maxulp=1)
    else:
        _near(batch, rows)


def _uses_vector_math(programs) -> bool:
    """Whether the tape runs one of `programs`' steps with vecmath (not libm)."""
    return any(step.op in VECTOR_OPS for p in programs for step in p.steps)


def _near(actual, expected, rtol: float = 1e-12) -> None:
    """Equal but for rounding: vecmath and libm are both within an ulp of the true value, and
    a last-bit difference spreads through what follows (relative to each column's scale)."""
    actual, expected = np.atleast_2d(actual), np.atleast_2d(expected)
    assert (np.isnan(actual) == np.isnan(expected)).all()
    finite = np.isfinite(expected)
    assert (actual[~finite & ~np.isnan(expected)] == expected[~finite & ~np.isnan(expected)]).all()
    scale = np.max(np.where(finite, np.abs(expected), 0.0), axis=0, keepdims=True)
    np.testing.assert_allclose(np.where(finite, actual, 0.0), np.where(finite, expected, 0.0),
                               rtol=rtol, atol=0.0 + rtol * scale.max(initial=0.0))


def _run_tape(module, name: str, X: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(row by row, batch) results of one tape program."""
    rows = np.empty((len(X), width))
    for i, x in enumerate(X):
        getattr(module, f"{name}_row")(x, rows[i])
    batch = np.empty((len(X), width))
    getattr(module, f"{name}_batch")(X, batch)
    return rows, batch


# -- the op table ---------------------------------------------------------------------------------


def test_opcodes_are_the_tape_only_instructions_then_the_op_table_in_table_order():
    assert STANDARD.standard and STANDARD.names == (*TAPE_ONLY, *OPS)
    module = STANDARD.module
    assert [getattr(module, n.upper()) for n in STANDARD.names] == list(
        range(len(OPS) + len(TAPE_ONLY)))


def test_each_op_is_computed_with_its_numba_template():
    # The interpreter's branch for an op is the op table's Numba template on operands a, b, c.
    source = inspect.getsource(STANDARD.module.apply)
    for name, spec in OPS.items():
        arity = 2 if spec.arity < 0 else spec.arity
        template = spec.render("nb", ["a", "b", "c"][:arity])
        assert f"op == {name.upper()}:\n        r = {template}\n" in source, name


def test_vector_ops_are_the_op_tables_lane_templates_computed_alike():
    # The ops the tape runs with vecmath are the one-operand ops the op table gives a lane
    # template (plus the tape-only sincos), each computed with that template's expression.
    with_lanes = {name for name, spec in OPS.items() if spec.lanes is not None and spec.arity == 1}
    assert VECTOR_OPS == with_lanes | {"sincos"}
    source = inspect.getsource(STANDARD.module._unary)
    for name in with_lanes:
        assert f"dst[j] = {OPS[name].render('lanes', ['src[j]'])}\n" in source, name


def _single_op_program(name: str, arity: int) -> Program:
    operands = tuple(Operand(NAME, a) for a in ("a", "b", "c")[:arity])
    return Program("value", ("a", "b", "c"), (Step("t0", name, operands),),
                   (("f", Operand(NAME, "t0")),))


def _reference(spec, row, arity: int) -> float:
    """The op's Python template (the C library through `math`) at one point, NumPy's
    `evaluate` where `math` raises (cbrt's template calls symgraph's own, `cuberoot.cbrt`)."""
    template = spec.render("py", ["a", "b", "c"][:arity])
    names = {"math": math, "np": np, "_cbrt": cbrt}
    try:
        return eval(template, names, dict(zip("abc", map(float, row))))
    except (ArithmeticError, ValueError):
        with np.errstate(all="ignore"):
            return float(spec.evaluate(*row[:arity]))


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_follows_numpy_on_its_domain_and_at_edge_points(name):
    spec = OPS[name]
    arity = 2 if spec.arity < 0 else spec.arity
    rng = np.random.default_rng(0)
    columns = []
    for i in range(3):
        low, high = spec.domain[min(i, len(spec.domain) - 1)]
        samples = np.concatenate([np.linspace(low, high, 41), rng.choice(EDGES, 120)])
        columns.append(rng.permutation(samples))
    X = np.ascontiguousarray(np.stack(columns, axis=1))
    with np.errstate(all="ignore"):
        expected = np.asarray(spec.evaluate(*[X[:, i] for i in range(arity)]), dtype=float)
    program = _single_op_program(name, arity)
    module = build_tape_module([program])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # never raises, never warns
        rows, batch = _run_tape(module, "value", X, 1)
    _rows_and_lanes_agree(rows, batch, [program])
    # NumPy's exp/log/tanh... may differ from the C library's by an ulp; specials must match.
    if spec.nb_prelude:  # a compiled special function: Numba's math.gamma/erf are its own
        np.testing.assert_allclose(rows[:, 0], expected, rtol=1e-15, atol=1e-15)
        return
    np.testing.assert_allclose(rows[:, 0], expected, rtol=4e-16, atol=0)
    if name in VECTOR_OPS:
        # vecmath, like the C library, is within an ulp of the true value (faithful), so the
        # two are equal or neighbours; specials, signed zeros included, are equal.
        libm = np.array([_reference(spec, row, arity) for row in X])
        special = ~np.isfinite(libm) | (libm == 0.0)
        _same(rows[special, 0], libm[special])
        np.testing.assert_array_max_ulp(rows[~special, 0], libm[~special], maxulp=1)
        return
    # Bit for bit, the op's Python template (the C library through `math`, as Numba's), where
    # `math` does not raise; it decides the sign of zero results too (max(-0.0, 0.0)...).
    template = spec.render("py", ["a", "b", "c"][:arity])
    if template != spec.render("nb", ["a", "b", "c"][:arity]):
        return  # cbrt, floor, ceil: NumPy in Python, Numba's own in kernels (checked above)
    for row, value in zip(X, rows[:, 0]):
        try:
            reference = eval(template, {"math": math, "np": np}, dict(zip("abc", map(float, row))))
        except (ArithmeticError, ValueError):
            continue
        _same(value, reference)


def test_tapes_build_on_first_use_and_equal_the_eager_ones_and_refuse_unknown_ops_at_once(
        tmp_path):
    x, y = sg.symbols("x y")
    expr = sg.sin(x * y) * sg.exp(-x) + sg.tanh(y) ** 2
    fn = sg.compile(expr, [x, y], strategy="tape", cache_dir=tmp_path)
    assert "not built" in repr(fn.module)  # compile builds no tape: the first call does
    programs = build_programs([expr], [x, y], [x, y], True, False)
    eager = build_tape_module(programs)
    point, out = np.array([0.3, -1.2]), np.empty(3)
    eager.value_grad_row(point, out)
    assert fn.value_and_grad(point)[1].tolist() == out[1:].tolist()
    assert "value_grad: not built" not in repr(fn.module) and "value: not built" in repr(fn.module)
    assert fn(point) == out[0]
    for name, tape in fn.module.tapes.items():
        assert tape.opcodes.tolist() == eager.tapes[name].opcodes.tolist()
    with pytest.raises(NotImplementedError, match="frobnicate"):
        check_tape_ops(Program("value", ("a",), (Step("t0", "frobnicate", (Operand(NAME, "a"),)),),
                               (("f", Operand(NAME, "t0")),)))


def test_unknown_ops_are_refused():
    program = Program("value", ("a",), (Step("t0", "frobnicate", (Operand(NAME, "a"),)),),
                      (("f", Operand(NAME, "t0")),))
    with pytest.raises(NotImplementedError, match="frobnicate"):
        build_tape(program)


# -- the straight-line kernels' numbers ----------------------------------------------------------


def _llvm_rewrites_a_pow(programs) -> bool:
    """LLVM turns ``c ** y`` (c a power of two) into exp2 and ``y ** 0.5`` into sqrt in the
    straight-line kernels: a few ulps from C's pow, which NumPy and the tape use."""
    for p in programs:
        for step in p.steps:
            if step.op == "pow":
                base, exponent = step.operands
                try:
                    if base.kind == CONST and math.log2(abs(base.value)).is_integer():
                        return True
                except (ValueError, OverflowError):
                    pass
                if exponent == Operand(CONST, 0.5):
                    return True
    return False


def _compare_with_compiled(fn, X: np.ndarray) -> None:
    tape = build_tape_module(fn.programs)
    for program in fn.programs:
        width = len(program.outputs)
        rows, batch = _run_tape(tape, program.name, X, width)
        expected = np.empty((len(X), width))
        for i, x in enumerate(X):  # row kernels: the parallel batch loop compiles slowly
            getattr(fn.module, f"{program.name}_row")(x, expected[i])
        _rows_and_lanes_agree(rows, batch, fn.programs)
        if _uses_vector_math(fn.programs):
            _near(rows, expected)
        elif _llvm_rewrites_a_pow(fn.programs):
            np.testing.assert_allclose(rows, expected, rtol=1e-12, atol=1e-300)
        else:
            _same(rows, expected)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_tape_equals_the_straight_line_kernels_on_the_corpus(name):
    expr, args = CORPUS[name](*CORPUS_ARGS.get(name, ()))
    fn = sg.compile(expr, args, hessian=name in ("black_scholes", "polynomial"))
    X = np.random.default_rng(1).uniform(0.2, 1.5, (9, len(args)))
    _compare_with_compiled(fn, X)
    values = np.array([fn(x) for x in X])
    np.testing.assert_allclose(values, sg.evaluate(expr, dict(zip(args, X.T))), rtol=1e-12)


def test_tape_equals_the_straight_line_kernels_at_numpys_edge_points():
    x, y = sg.symbols("x y")
    fn = sg.compile([expr for expr, _ in EDGE_CASES], [x, y])  # one compile for every case
    X = np.array([point for _, point in EDGE_CASES], dtype=float)
    _compare_with_compiled(fn, X)


@settings(max_examples=3, **SETTINGS)
@given(st.lists(expressions(max_depth=4), min_size=8, max_size=8),
       st.lists(points(), min_size=5, max_size=5))
def test_tape_equals_numba_kernels_on_random_expressions(exprs, pts):
    fn = sg.compile(exprs, VARIABLES)  # a vector function: one Numba compile checks them all
    X = np.array([[p[v.name] for v in VARIABLES] for p in pts])
    _compare_with_compiled(fn, X)


@settings(max_examples=40, **SETTINGS)
@given(expressions(max_depth=4), st.lists(points(), min_size=3, max_size=3))
def test_tape_agrees_with_python_backend_and_evaluate(expr, pts):
    fn = sg.compile(expr, VARIABLES, backend="python", hessian=True)
    tape = build_tape_module(fn.programs)
    X = np.array([[p[v.name] for v in VARIABLES] for p in pts])
    for program in fn.programs:
        width = len(program.outputs)
        rows, batch = _run_tape(tape, program.name, X, width)
        _rows_and_lanes_agree(rows, batch, fn.programs)
        expected = np.empty((len(X), width))
        for i, x in enumerate(X):
            getattr(fn.module, f"{program.name}_row")(x, expected[i])
        # Python's math is the same C library; its NumPy fallback (where math raises) may not be.
        np.testing.assert_allclose(rows, expected, rtol=1e-9, atol=1e-12)
    reference = sg.evaluate(expr, dict(zip(VARIABLES, X.T)))
    np.testing.assert_allclose(rows[:, 0], reference * np.ones(len(X)), rtol=1e-9, atol=1e-12)


_TAPE_ARRAYS = ("opcodes", "operands", "targets", "blocks", "constants", "outputs", "step_of")


def _tape_arrays(tape) -> list:
    return [tape.n_registers] + [getattr(tape, a).tobytes() for a in _TAPE_ARRAYS] + [
        getattr(tape, a).dtype.str for a in _TAPE_ARRAYS]


def _assembled_equals_stepwise(program) -> None:
    """`build_tape` (Numba's `assemble`, from the scheduler's Encoding and from the names alone)
    makes the very arrays of the step-by-step Python builder (the reference)."""
    from dataclasses import replace

    from symgraph.backends.tape import builder

    reference = _tape_arrays(builder._finished(program, STANDARD,
                                               *builder._stepwise(program, STANDARD)))
    assert _tape_arrays(build_tape(program)) == reference
    assert _tape_arrays(build_tape(replace(program, encoding=None))) == reference


@settings(max_examples=25, **SETTINGS)
@given(expressions(max_depth=5))
def test_assembled_tapes_are_the_step_by_step_builders_bit_for_bit(expr):
    for program in build_programs([expr], VARIABLES, VARIABLES, True, True):
        assert program.encoded is not None  # the scheduler's codes, checked against names
        _assembled_equals_stepwise(program)


def test_assembled_tapes_cover_negations_constants_powers_pairs_and_wide_sums():
    x, y, z = VARIABLES
    terms = [sg.sin(x * k) * y ** (k % 5 - 2) - z / (k + 1) for k in range(20)]
    exprs = [sum(terms) + sg.cos(x * 3), -(x * y) * sg.tanh(-z) - sg.exp(-x), x ** 3 - x ** -1,
             apply("add", x, apply("neg", y), apply("neg", z), -0.0, 0.0), sg.where(x > y, x, z)]
    programs = build_programs(exprs, VARIABLES, VARIABLES, False, False)
    assert any(len(s.operands) > 8 for p in programs for s in p.steps)
    for program in programs:
        _assembled_equals_stepwise(program)
    a, b = Operand(NAME, "a"), Operand(NAME, "b")
    steps = (Step("t0", "neg", (a,)), Step("t1", "mul", (Operand(NAME, "t0"), b)),
             Step("t2", "add", (Operand(NAME, "t0", True), Operand(CONST, -0.0), b)),
             Step("t3", "sin", (Operand(NAME, "t0"),)), Step("t4", "cos", (Operand(NAME, "t0"),)),
             Step("t5", "pow", (Operand(NAME, "t1", True), Operand(CONST, -3.0))),
             Step("t6", "mul", (Operand(CONST, math.nan), Operand(NAME, "t5"))))
    made = Program("value", ("a", "b"), steps, (("f", Operand(NAME, "t6", True)),
                                                ("g", Operand(NAME, "t2")), ("h", a),
                                                ("k", Operand(CONST, 2.5))))
    _assembled_equals_stepwise(made)  # (no Encoding: from the names)
    wrong = Program("value", ("a",), (Step("t0", "sin", (Operand(NAME, "t1"),)),
                                      Step("t1", "cos", (a,))), (("f", Operand(NAME, "t0")),))
    with pytest.raises(ValueError, match="unknown operand 't1' in step 0"):
        build_tape(wrong)  # a name used before its step: the step-by-step builder's error


# -- registers, text, shapes ---------------------------------------------------------------------


def test_registers_are_reused_along_a_long_chain():
    x = sg.symbols("x")
    u = x
    for i in range(5_000):
        u = apply(("sin", "cos", "tanh")[i % 3], u) * 0.5 + x
    value, value_grad = [build_tape(p) for p in build_programs([u], [x], [x], True, False)]
    # a link: the function, then `* 0.5 + x` fused into one muladd; live values, not steps
    assert len(value.opcodes) == 10_000 and value.n_registers <= 4
    # Reverse mode keeps one forward value per link (cos(u), 1 - tanh(u)**2...) for the way
    # back; nothing else stays.
    assert len(value_grad.opcodes) > 20_000 and value_grad.n_registers <= 5_000 + 10
    assert value_grad.n_registers * lane_width(value_grad.n_registers) <= LANE_BUDGET


def test_tapes_too_big_for_lanes_batch_point_by_point_with_the_point_interpreter(monkeypatch):
    x, y = sg.symbols("x y")
    expr = sg.sin(x * y) * sg.exp(-x) + sg.tanh(y) ** 2
    programs = build_programs([expr], [x, y], [x, y], True, False)
    monkeypatch.setattr(tape_module, "LANE_BUDGET", 7)  # not even 8 lanes fit
    assert lane_width(build_tape(programs[1]).n_registers) == 1
    module = build_tape_module(programs)
    X = np.random.default_rng(5).uniform(-3, 3, (50, 2))
    X[7] = [math.inf, 1.0]
    rows, batch = _run_tape(module, "value_grad", X, 3)
    _same(rows, batch)  # the same interpreter, point by point


def test_sincos_pairs_beyond_vecmaths_exact_range_equal_libm_in_rows_and_lanes():
    x, y = sg.symbols("x y")
    fn = sg.compile(sg.sin(x) * y + sg.cos(x) * 0.5, [x, y], strategy="tape")
    assert SINCOS in fn.module.tapes["value_grad"].opcodes.tolist()
    straight = sg.compile(sg.sin(x) * y + sg.cos(x) * 0.5, [x, y], strategy="straight")
    far = [1e10, -3e8, 1e300, math.inf, -math.inf, math.nan, 6e7]
    near = [0.0, -0.0, 1.0, -2.5, 4e7, 1e-300]
    X = np.array([[v, 1.5] for v in far + near] * 10)  # far and near values share blocks
    rows = np.array([fn.value_and_grad(p)[1] for p in X])
    expected = np.array([straight.value_and_grad(p)[1] for p in X])
    _same(rows, fn.value_and_grad(X)[1])  # gathered blocks or lanes: same numbers
    is_far = np.isin(X[:, 0], far) | np.isnan(X[:, 0])
    _same(rows[is_far], expected[is_far])  # libm, exactly
    _near(rows[~is_far], expected[~is_far])


def _blocks_of(tape) -> list[range]:
    return [range(s, e) for s, e in zip(tape.blocks[:-1].tolist(), tape.blocks[1:].tolist())]


def test_blocks_are_runs_of_one_op_and_vector_blocks_never_read_their_own_results():
    # Wide layers of sin/tanh over shared values, each layer reading the one before: blocks
    # must cut where a vector op would read a register its own block writes (it gathers
    # every operand before it stores any result), and after MAX_BLOCK instructions.
    xs = sg.symbols("x0 x1 x2 x3 x4 x5")
    width = MAX_BLOCK + 44
    layer = [xs[i % 6] * (0.01 * i) for i in range(width)]
    for depth in range(3):
        f = sg.tanh if depth % 2 else sg.sin
        layer = [f(layer[i] * 0.5 + layer[(i + 1) % width]) for i in range(width)]
    expr = apply("add", *layer)
    for program in build_programs([expr], xs, xs, True, False):
        tape = build_tape(program)
        blocks = _blocks_of(tape)
        assert blocks[0].start == 0 and blocks[-1].stop == len(tape.opcodes)
        assert all(len(b) > 0 for b in blocks)
        for block in blocks:
            ops = set(tape.opcodes[block.start:block.stop].tolist())
            assert len(ops) == 1
            if ops.pop() in VECTOR_CODES:
                assert len(block) <= MAX_BLOCK
                written = set(tape.targets[block.start:block.stop].tolist())
                # A result may overwrite a register an earlier instruction of the block read
                # (reads come first), never be read by a later one.
                for i in block:
                    written_before = set(tape.targets[block.start:i].tolist())
                    pair = tape.opcodes[i] == SINCOS
                    written_before |= {int(tape.operands[j, 2]) for j in range(block.start, i)
                                       if pair}  # a sincos's second target
                    reads = tape.operands[i, :2] if pair else tape.operands[i]
                    assert not written_before & set(reads.tolist())
                assert written
        if program.name == "value_grad":  # sin(u) and its derivative cos(u): one instruction
            assert SINCOS in tape.opcodes.tolist()
            assert STANDARD.codes["cos"] not in tape.opcodes.tolist()
            assert re.search(r"^r\d+, r\d+ = sincos\(r\d+\)    # ", build_tape_module(
                [program]).source, re.M)
        vector_sizes = [len(b) for b in blocks
                        if tape.opcodes[b.start] in VECTOR_CODES]
        assert max(vector_sizes) == MAX_BLOCK  # a layer shares blocks
    fn = sg.compile(expr, xs, strategy="straight")
    tape_fn = sg.compile(expr, xs, strategy="tape")
    X = np.random.default_rng(3).uniform(-2, 2, (300, 6))
    rows = np.array([tape_fn.value_and_grad(x)[1] for x in X[:20]])
    _near(rows, np.array([fn.value_and_grad(x)[1] for x in X[:20]]))
    _same(rows, tape_fn.value_and_grad(X[:20])[1])  # gathered blocks or lanes: same numbers
    _near(tape_fn.value_and_grad(X)[1], fn.value_and_grad(X)[1])


def test_source_prints_one_readable_line_per_instruction_deterministically():
    x, y = sg.symbols("x y")
    f = sg.sin(x * y) - y ** 3 + sg.where(x > y, x, -y)
    programs = build_programs([f], [x, y], [x, y], True, True)
    source = build_tape_module(programs).source
    assert source == build_tape_module(programs).source
    lines = source.splitlines()
    tape = build_tape(programs[0])
    instructions = [ln for ln in lines[: lines.index("")] if re.match(r"r\d+ = \w+\(", ln)]
    assert len(instructions) == len(tape.opcodes)
    assert any(re.fullmatch(r"r\d+ = sin\(r\d+\)    # t\d+: sin\(x\*y\)", ln) for ln in lines)
    assert "r0 = x[0]    # x" in lines and "out[0] = r" in source


def test_points_as_tuples_lists_and_strided_arrays_and_shape_errors():
    x, y = sg.symbols("x y")
    module = build_tape_module(build_programs([x * y + 1], [x, y], [x, y], True, False))
    out = np.empty(3)
    module.value_grad_row((2.0, 3.0), out)
    assert out.tolist() == [7.0, 3.0, 2.0]
    strided = np.empty((4, 3))[:, 1]  # not contiguous: filled through a copy
    module.value_grad_row([2.0, 3.0], strided[:3])
    assert strided[:3].tolist() == [7.0, 3.0, 2.0]
    X = np.arange(40.0).reshape(20, 2)
    for rows in (0, 1, 7, 20):
        OUT = np.full((rows, 3), np.nan, order="F")
        module.value_grad_batch(X[:rows], OUT)
        np.testing.assert_array_equal(OUT, np.stack([X[:rows, 0] * X[:rows, 1] + 1,
                                                     X[:rows, 1], X[:rows, 0]], axis=1))
    with pytest.raises(ValueError):
        module.value_grad_row((1.0, 2.0, 3.0), out)
    with pytest.raises(ValueError):
        module.value_grad_batch(X, np.empty((19, 3)))


def test_a_tape_module_pickles_as_its_arrays():
    x, y = sg.symbols("x y")
    module = build_tape_module(build_programs([sg.exp(x) * y], [x, y], [x, y], True, False))
    copy = pickle.loads(pickle.dumps(module))
    assert isinstance(copy, TapeModule) and copy.path is None
    a, b = np.empty(3), np.empty(3)
    module.value_grad_row((0.5, 2.0), a)
    copy.value_grad_row((0.5, 2.0), b)
    _same(a, b)


# -- size --------------------------------------------------------------------------------------


def bounded_dag(ops: int, seed: int = 5) -> tuple[sg.Node, list[sg.Node]]:
    """A shared random DAG whose values stay in [-1.6, 1.6] on [-1, 1]^5 (no overflow)."""
    rng = random.Random(seed)
    leaves = list(sg.symbols("a b c d e"))
    pool, used = list(leaves), set()
    for _ in range(ops // 2):
        a, b = rng.choice(pool[-50:]), rng.choice(pool)
        used.update((id(a), id(b)))
        kind = rng.random()
        if kind < 0.35:
            pool.append(0.5 * (a + b))
        elif kind < 0.7:
            pool.append(a * sg.tanh(b))
        else:
            pool.append(apply(rng.choice(["sin", "cos", "atan", "sigmoid"]), a))
    return apply("add", *[n for n in pool if id(n) not in used]), leaves


def _module_of(source: str, folder: Path):
    path = folder / "kernels.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("tape_test_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_50000_node_expression_compiles_to_the_tape_and_agrees_with_the_python_backend(
        tmp_path):
    expr, args = bounded_dag(70_000)
    assert count_ops(expr) >= 50_000
    fn = sg.compile(expr, args)  # auto: far above the threshold, so the tape
    assert fn.strategy == "tape" and fn.path is None
    # The Python backend's kernels of the same programs (emitted directly: `sg.compile`'s
    # module docstring prints the whole formula, most of a Python compile's time here).
    python = _module_of(emit_python(fn.programs, "50k nodes", [], [a.name for a in args], "test"),
                        tmp_path)
    X = np.random.default_rng(2).uniform(-1, 1, (4, len(args)))
    values, grads = fn.value_and_grad(X)
    rows = np.array([np.concatenate([[v], g]) for v, g in map(fn.value_and_grad, X)])
    _same(rows, np.column_stack([values, grads]))
    expected = np.empty_like(rows)
    for i, x in enumerate(X):
        python.value_grad_row(x, expected[i])
    assert np.isfinite(expected).all()
    _near(rows, expected)  # the same order of operations; vecmath's sin/tanh/sigmoid vs libm


def test_big_straight_line_programs_heavy_in_vector_math_batch_on_the_tape_lanes(monkeypatch,
                                                                               tmp_path):
    # A 220-deep tanh/exp/sin nest (1,336 steps) past the lane kernels' compile budget (lowered
    # here: the real one takes this nest, ~10 s of compile), most of its cost in libm calls that
    # the tape's lanes make SIMD; a Rosenbrock of the same size stays on its row kernel.
    monkeypatch.setattr(numba_batch, "LANE_BUDGET", 1_000)
    x, y = sg.symbols("x y")
    u = x
    for i in range(220):
        u = (sg.tanh, sg.sin, sg.exp)[i % 3](u) * 0.3 + y * 0.5
    heavy = sg.compile(u, [x, y], cache_dir=tmp_path)  # (no choice kept from the real budget)
    assert heavy.strategy == "straight"
    assert lanes_beat_rows(heavy.programs[1]) and not uses_lanes(heavy.programs[1])
    row, batch = heavy.kernels("value_grad")
    assert "value_grad" in heavy.batch_tapes.tapes
    X = np.random.default_rng(4).uniform(-1, 1, (200, 2))
    rows = np.empty((200, 3))
    for x_, out in zip(X, rows):
        row(x_, out)
    _near(heavy.value_and_grad(X)[1], rows[:, 1:])
    xs = sg.symbols(" ".join(f"r{i}" for i in range(40)))
    rosen = sg.add(*[100 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1 - xs[i]) ** 2 for i in range(39)])
    rosen_fn = sg.compile(rosen, xs)
    assert not lanes_beat_rows(rosen_fn.programs[1]) and rosen_fn.batch_tapes is None


def test_auto_strategy_picks_the_tape_above_the_threshold():
    x, y = sg.symbols("x y")
    small = build_programs([sg.sin(x) * y], [x, y], [x, y], True, False)
    big = build_programs([sg.add(*[sg.sin(x * (1 + i / 7)) for i in range(TAPE_THRESHOLD_OPS)])],
                         [x, y], [x, y], True, False)
    assert choose_strategy(small) == "straight" and choose_strategy(big) == "tape"
    assert choose_strategy(big, "straight") == "straight"
    assert choose_strategy(small, "tape") == "tape"
    with pytest.raises(ValueError, match="strategy"):
        choose_strategy(small, "jit")


def test_scale_benchmark_children_and_report_run():
    # The benchmark's own measurements, at a tiny size, in this process (no subprocesses).
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "scale.py"
    spec = importlib.util.spec_from_file_location("scale_benchmark", path)
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)
    key = {"workload": "sum", "size": 150}
    runs = [{"kind": "pipeline", **key, **scale.child_pipeline("sum", 150)},
            {"kind": "frontends", **key, **scale.child_frontends("sum", 150)},
            {"kind": "straight", **key, "timeout": 1.0}]
    assert runs[0]["finite"] and runs[0]["nodes"] >= 140
    assert runs[1]["parsed_nodes"] == runs[1]["nodes"]
    meta = dict(command="test", machine="m", cores=1, load=0.0, python="3", numpy="2",
                numba="0", commit="c")
    text = scale.markdown({"meta": meta, "runs": runs})
    assert f"| sum | {runs[0]['nodes']:,} | {runs[0]['steps'][1]:,} | > 1 s (stopped)" in text
