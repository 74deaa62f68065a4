"""The tape's instruction set and interpreter come from the op table: codes stay put when an op is
appended, the shipped interpreter (`standard.py`) is the table's rendering byte for byte in any
process, and an op registered at run time runs on its own generated interpreter with the Python
backend's numbers (value, gradient, batch; the gradient also against finite differences)."""

from __future__ import annotations

import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.backends.numba import vecmath
from symgraph.backends.tape import module as tape_module
from symgraph.backends.tape.builder import build_tape, build_tape_module
from symgraph.backends.tape.generate import STANDARD_PATH, interpreter_source, standard_source
from symgraph.backends.tape.interpreter import interpreter_for
from symgraph.backends.tape.opcodes import FUSED, IMMEDIATE, TAPE_ONLY, instruction_set
from symgraph.ir.node import apply
from symgraph.ir.ops import OPS, OpSpec
from symgraph.lower.schedule import NAME, Operand, Program, Step

VECMATH = vecmath.NAMES


def _spec(name: str, nb: str, py: str, np_: str, lanes: str | None = None, **extra) -> OpSpec:
    """A one-argument op as `symgraph.ir.ops._func` builds them (its partial is x's, as a
    stand-in: only the tape's forward code is looked at where this is used)."""
    return OpSpec(name=name, arity=1, evaluate=lambda x: x, partials=lambda a, out: (1.0,),
                  py=py, np=np_, nb=nb, latex=name + r"\left({0}\right)",
                  sympy=lambda sp, x: x, domain=((-3.0, 3.0),), lanes=lanes, **extra)


def _softsign() -> OpSpec:
    """x / (1 + |x|): no vector form, so the tape computes it bit for bit as Python does."""
    def partials(a, out):
        denominator = 1.0 + a[0].call("abs")
        return (1.0 / (denominator * denominator),)

    return OpSpec(name="softsign", arity=1, evaluate=lambda x: x / (1.0 + np.abs(x)),
                  partials=partials, py="{0} / (1.0 + abs({0}))", np="{0} / (1.0 + np.abs({0}))",
                  nb="{0} / (1.0 + abs({0}))", latex=r"\operatorname{{softsign}}\left({0}\right)",
                  sympy=lambda sp, x: x / (1 + sp.Abs(x)), domain=((-3.0, 3.0),))


def _swish() -> OpSpec:
    """x * sigmoid(x), with a lane template: a vector op of the tape (vecmath's vexp)."""
    def partials(a, out):
        s = a[0].call("sigmoid")
        return (s + out * (1.0 - s),)

    return OpSpec(name="swish", arity=1, evaluate=lambda x: x / (1.0 + np.exp(-x)),
                  partials=partials, py="{0} / (1.0 + math.exp(-{0}))",
                  np="{0} / (1.0 + np.exp(-{0}))", nb="{0} / (1.0 + math.exp(-{0}))",
                  lanes="{0} / (1.0 + vexp(-{0}))", latex=r"\operatorname{{swish}}\left({0}\right)",
                  sympy=lambda sp, x: x / (1 + sp.exp(-x)), domain=((-3.0, 3.0),), cost=8)


# -- the derivation (pure Python: no interpreter compiled) ----------------------------------------


def test_appending_an_op_keeps_every_code_and_gives_the_new_one_the_next():
    before = instruction_set(OPS, VECMATH)
    after = instruction_set({**OPS, "softsign": _softsign(), "swish": _swish()}, VECMATH)
    assert after.names[:len(before.names)] == before.names
    assert after.names[len(before.names):] == ("softsign", "swish")
    assert after.codes["softsign"] == len(before.names)
    assert {name: after.codes[name] for name in before.names} == before.codes
    assert list(after.vector)[:len(before.vector)] == list(before.vector)  # vector ops too
    assert "swish" in after.vector and "softsign" not in after.vector
    assert before.names[:len(TAPE_ONLY)] == TAPE_ONLY  # fixed codes: sub 0, nmul 1, sincos 2
    assert TAPE_ONLY == ("sub", "nmul", "sincos", *(name for name, *_ in FUSED),
                         *(name for name, *_ in IMMEDIATE))


def test_every_op_of_the_table_is_an_instruction_with_its_numba_template():
    instructions = instruction_set(OPS, VECMATH)
    assert not instructions.refused
    assert instructions.names == (*TAPE_ONLY, *OPS)
    for name, spec in OPS.items():
        arity = 2 if spec.arity < 0 else spec.arity
        code = instructions.codes[name]
        assert instructions.scalar[code] == spec.render("nb", ["a", "b", "c"][:arity])
        assert instructions.arities[code] == arity
    assert set(instructions.vector) == {n for n, s in OPS.items()
                                        if s.lanes is not None and s.arity == 1}


def test_ops_the_interpreter_cannot_take_are_refused_with_a_reason_and_keep_others_codes():
    odd = {"my-op": _spec("my-op", "{0}", "{0}", "{0}"),
           "simd": _spec("simd", "{0}", "{0}", "{0}"),  # SIMD is an interpreter constant
           "sub": _spec("sub", "{0}", "{0}", "{0}"),  # a tape-only instruction's name
           "broken": _spec("broken", "{1}", "{1}", "{1}")}  # renders no operand it has
    instructions = instruction_set({**OPS, **odd}, VECMATH)
    assert set(instructions.refused) == set(odd)
    assert "cannot be an interpreter constant" in instructions.refused["simd"]
    assert "does not render" in instructions.refused["broken"]
    assert instructions.names == instruction_set(OPS, VECMATH).names


def test_range_limited_vecmath_gets_libm_beyond_its_limit_and_other_uses_stay_scalar():
    instructions = instruction_set({**OPS, "sin2": _spec("sin2", "math.sin(2.0 * {0})",
                                                         "math.sin(2.0 * {0})",
                                                         "np.sin(2.0 * {0})",
                                                         lanes="vsin(2.0 * {0})")}, VECMATH)
    assert "sin2" not in instructions.vector  # vsin of a computed value: no cheap range check
    sin = instructions.vector["sin"]
    assert (sin.limit, sin.near, sin.far) == ("SIN_COS_LIMIT", "vsin(x)", "math.sin(x)")
    assert instructions.vector["exp"].limit is None


def test_the_shipped_interpreter_is_the_op_tables_rendering():
    # Fails after an op or template changes until `python -m symgraph.backends.tape.generate`.
    assert STANDARD_PATH.read_text(encoding="utf-8") == standard_source()
    assert interpreter_for().standard


@pytest.mark.slow  # two fresh processes: ~2 s
def test_the_generated_source_is_byte_identical_in_fresh_processes():
    script = ("import sys; from symgraph.backends.tape.generate import standard_source; "
              "sys.stdout.write(standard_source())")
    outputs = []
    for seed in ("1", "2"):  # set/dict order under other string hashes
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == STANDARD_PATH.read_text(encoding="utf-8")


# -- the standard interpreter --------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_runs_alike_on_the_point_interpreter_rows_and_lanes(name, monkeypatch):
    spec = OPS[name]
    arity = 2 if spec.arity < 0 else spec.arity
    operands = tuple(Operand(NAME, v) for v in ("a", "b", "c")[:arity])
    program = Program("value", ("a", "b", "c"), (Step("t0", name, operands),),
                      (("f", Operand(NAME, "t0")),))
    X = np.random.default_rng(7).uniform(-2.0, 2.0, (40, 3))
    X[:4] = [[0.0, -0.0, 1.0], [math.inf, 1.0, -1.0], [math.nan, 2.0, 0.5], [-1e300, 1e-310, 3]]
    lanes, rows, points = np.empty((40, 1)), np.empty((40, 1)), np.empty((40, 1))
    with np.errstate(all="ignore"):
        module = build_tape_module([program])
        module.value_batch(X, lanes)
        for x, out in zip(X, rows):
            module.value_row(x, out)
        monkeypatch.setattr(tape_module, "LANE_BUDGET", 0)  # not even 8 lanes fit: points
        build_tape_module([program]).value_batch(X, points)
    assert rows.tobytes() == points.tobytes()
    form = instruction_set(OPS, VECMATH).lanes.get(name)
    if form is None or form.loop == spec.render("nb", ["a", "b", "c"][:arity]):
        assert lanes.tobytes() == rows.tobytes()  # the row path's template: bit for bit
        return
    # A two-operand vecmath op (vpow, vatan2, vhypot) in the lanes: within an ulp of libm, and
    # libm's own numbers where its flag sends a lane to libm (zeros, infinities, nan: X[:4]);
    # xlogy within two (a log then a product on both sides, test_vecmath).
    special = ~np.isfinite(rows) | (rows == 0.0)
    special[:4] = True
    assert lanes[special].tobytes() == rows[special].tobytes()
    np.testing.assert_array_max_ulp(lanes[~special], rows[~special],
                                    maxulp=2 if name == "xlogy" else 1)


def test_a_standard_tape_pickles_without_its_interpreters_source():
    x, y = sg.symbols("x y")
    fn = sg.compile(sg.exp(x) * y, [x, y], strategy="tape")
    data = pickle.dumps(fn.module)
    assert len(data) < 20_000  # arrays and a reference, not the 20 kB interpreter
    copy = pickle.loads(data)
    assert copy.tapes["value_grad"].interpreter is interpreter_for()


# -- an op registered at run time ----------------------------------------------------------------


@pytest.fixture
def extra_ops():
    """softsign and swish in OPS for the test; OPS as it was afterwards."""
    saved = dict(OPS)
    OPS["softsign"], OPS["swish"] = _softsign(), _swish()
    try:
        yield
    finally:
        OPS.clear()
        OPS.update(saved)


def _finite_differences(fn, X: np.ndarray, h: float = 1e-6) -> np.ndarray:
    grads = np.empty_like(X)
    for k in range(X.shape[1]):
        step = np.zeros(X.shape[1])
        step[k] = h
        grads[:, k] = [(fn(x + step) - fn(x - step)) / (2 * h) for x in X]
    return grads


@pytest.mark.slow  # compiles the extended table's interpreter: ~10-40 s, once per cache folder
def test_a_registered_op_runs_on_its_own_interpreter_with_the_python_backends_numbers(extra_ops):
    x, y = sg.symbols("x y")
    expr = apply("softsign", x * y) * apply("swish", y) + apply("softsign", apply("swish", x))
    tape = sg.compile(expr, [x, y], strategy="tape")
    python = sg.compile(expr, [x, y], backend="python")
    interpreter = tape.module.tapes["value_grad"].interpreter
    assert not interpreter.standard and interpreter is interpreter_for()
    assert interpreter.names[-2:] == ("softsign", "swish")
    assert interpreter.names[:-2] == interpreter_for(
        {n: s for n, s in OPS.items() if n not in ("softsign", "swish")}).names
    assert interpreter.vector[interpreter.codes["swish"]]
    path = Path(interpreter.module.__file__)
    assert path.parent.name == "tape" and path.name.startswith("tape_interpreter_")
    assert path.read_text(encoding="utf-8") == interpreter_source(
        instruction_set(OPS, VECMATH), VECMATH)
    assert "softsign(r" in tape.source and "swish(r" in tape.source

    X = np.random.default_rng(11).uniform(-2.0, 2.0, (300, 2))
    values, grads = tape.value_and_grad(X)  # lanes
    rows = np.array([np.concatenate([[v], g]) for v, g in map(tape.value_and_grad, X[:30])])
    expected = np.array([np.concatenate([[v], g]) for v, g in map(python.value_and_grad, X)])
    assert rows.tobytes() == np.column_stack([values, grads])[:30].tobytes()
    # swish is a vector op (vecmath's exp, within an ulp of libm's): equal up to rounding.
    np.testing.assert_allclose(np.column_stack([values, grads]), expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(grads[:20], _finite_differences(python, X[:20]), rtol=1e-6,
                               atol=1e-8)

    # softsign alone has no vector form: the tape's numbers are Python's bit for bit.
    plain = apply("softsign", x * y) + apply("softsign", y) * x
    ours = sg.compile(plain, [x, y], strategy="tape").value_and_grad(X)
    theirs = sg.compile(plain, [x, y], backend="python").value_and_grad(X)
    assert ours[0].tobytes() == theirs[0].tobytes() and ours[1].tobytes() == theirs[1].tobytes()

    copy = pickle.loads(pickle.dumps(tape.module))  # a worker rebuilds it from its source
    assert copy.tapes["value_grad"].interpreter is interpreter
    out = np.empty(3)
    copy.value_grad_row(X[0], out)
    assert out.tobytes() == rows[0].tobytes()


def test_a_registered_op_gets_the_next_code_and_is_refused_once_it_is_gone(extra_ops):
    # Building only: the extended interpreter is imported, never compiled.
    program = Program("value", ("x",), (Step("t0", "softsign", (Operand(NAME, "x"),)),),
                      (("f", Operand(NAME, "t0")),))
    tape = build_tape(program)
    assert tape.opcodes.tolist() == [len(TAPE_ONLY) + len(OPS) - 2]
    assert not tape.interpreter.standard
    del OPS["softsign"], OPS["swish"]
    assert interpreter_for().standard
    with pytest.raises(NotImplementedError, match="softsign"):
        build_tape(program)
    assert tape.interpreter.names[-2:] == ("softsign", "swish")  # the tape keeps its own
