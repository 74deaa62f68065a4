"""lower.schedule_walk (a big order scheduled as it is walked, its negations settled
afterwards) against the eager path (walk, scan the negations, then encode) on the same jobs:
the same programs, codes, constants, census, steps and tapes, the prefix program's choice
included; and the eager path's decisions where the walk declines (a negation of a constant)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import symgraph as sg
from symgraph.ir.node import _intern, const
from symgraph.lower import schedule as sched
from symgraph.lower import schedule_walk
from symgraph.lower.schedule import DeferredProgram, schedule_all

x, y, z = sg.symbols("x y z")
INPUTS, NAMES = [x, y, z], ["x", "y", "z"]


def _random_dag(size: int, seed: int) -> sg.Node:
    """Sums (wider than MAX_WIDTH too), products, quotients, negations of inputs and of
    steps, read by sums alone or by other ops, powers, sin, cos, constants."""
    rng = random.Random(seed)
    pool = [x, y, z, x - y, -z]
    for _ in range(size):
        a, b = rng.choice(pool[-12:]), rng.choice(pool)
        kind = rng.randrange(10)
        node = (a + b if kind == 0 else a * sg.tanh(b) if kind == 1 else a - 2.5 * b
                if kind == 2 else sg.sin(a) * sg.cos(a) if kind == 3 else a ** 3 if kind == 4
                else a ** -2 if kind == 5 else sg.exp(-a) / (1.0 + b * b) if kind == 6
                else (-a) * b if kind == 7 else b - sg.sin(a) if kind == 8 else -a)
        pool.append(node)
    return sg.apply("add", *pool[-3 * sched.MAX_WIDTH:]) + sg.apply("mul", *pool[-20:])


def _gradient_jobs(f):
    value = [("f", f)]
    return [("value", value), ("value_grad", value + [(f"df_d{n}", g) for n, g in
                                                       zip(NAMES, sg.grad(f, INPUTS))])]


def _both(jobs, monkeypatch, threshold: int = 0):
    """(eager, walked) programs of `jobs`, and how many times the walk made the programs."""
    monkeypatch.setattr(sched, "DEFER_MIN_NODES", threshold)
    original, made = schedule_walk.walk_schedule, []

    def spy(*args):
        result = original(*args)
        made.append(result is not None)
        return result

    monkeypatch.setattr(sched, "walk_schedule", lambda *args: None)
    eager = schedule_all(jobs, INPUTS, NAMES, comments=False)
    monkeypatch.setattr(sched, "walk_schedule", spy)
    walked = schedule_all(jobs, INPUTS, NAMES, comments=False)
    return eager, walked, sum(made)


def _assert_same(eager, walked) -> None:
    for e, w in zip(eager, walked, strict=True):
        assert type(e) is type(w)
        assert (e.name, e.inputs, e.outputs, e.n_steps) == (w.name, w.inputs, w.outputs,
                                                            w.n_steps)
        a, b = e.encoding, w.encoding
        assert (a is None) == (b is None)
        if a is not None:
            assert bytes(a.operands) == bytes(b.operands)
            assert bytes(a.counts) == bytes(b.counts)
            assert (a.output_operands, a.constants, a.offset, a.ops, a.n_steps) == (
                b.output_operands, b.constants, b.offset, b.ops, b.n_steps)
        assert list(e.census.items()) == list(w.census.items())
        if isinstance(w, DeferredProgram):
            assert "steps" not in vars(w)
        assert e.steps == w.steps  # (decoded from the codes, names and negations included)


CASES = [_random_dag(60, 1), _random_dag(200, 2), _random_dag(40, 3) * sg.sin(x) - sg.cos(y),
         sg.apply("add", *[sg.sin(x * k) - y * k for k in range(1, 40)])]


@pytest.mark.parametrize("f", CASES)
def test_walked_gradient_programs_equal_the_eager_schedule_code_for_code(f, monkeypatch):
    eager, walked, made = _both(_gradient_jobs(f), monkeypatch)
    assert made == 1
    _assert_same(eager, walked)


def test_a_negation_another_output_multiplies_keeps_its_step_in_the_whole_not_the_prefix(
        monkeypatch):
    n = -sg.sin(x)
    f = y + n  # in the value program alone n is inlined: `y - sin(x)`
    jobs = [("value", [("f", f)]), ("both", [("f", f), ("g", n * z), ("h", n)])]
    eager, walked, made = _both(jobs, monkeypatch)
    assert made == 1
    _assert_same(eager, walked)
    assert eager[0].census != eager[1].census
    assert "neg" not in {op for op, _, _ in walked[0].census}  # the prefix: scheduled apart
    assert "neg" in {op for op, _, _ in walked[1].census}


def test_outputs_that_are_inputs_constants_negations_or_repeated_and_unused_inputs(
        monkeypatch):
    s = sg.sin(x) - y
    jobs = [("value", [("f", s)]), ("all", [("f", s), ("g", -y), ("h", x), ("k", const(2.0)),
                                             ("f2", s), ("m", -sg.cos(x) + s)])]
    eager, walked, made = _both(jobs, monkeypatch)
    assert made == 1
    _assert_same(eager, walked)


def test_raw_negations_of_a_negation_and_of_a_constant_schedule_as_eagerly(monkeypatch):
    inner = -sg.sin(x)
    twice = _intern("neg", (inner,), None)  # `apply` folds --a: only raw nodes have it
    f = _intern("add", (y, twice), None)
    eager, walked, made = _both([("value", [("f", f)])], monkeypatch)
    assert made == 1
    _assert_same(eager, walked)
    of_constant = _intern("add", (y, _intern("neg", (const(2.5),), None)), None)
    eager, walked, made = _both([("value", [("f", of_constant)])], monkeypatch)
    assert made == 0  # declined: the eager path keeps `y - 2.5` without an Encoding
    _assert_same(eager, walked)


def test_a_symbol_outside_the_arguments_is_refused_by_the_walk_as_by_the_eager_path(
        monkeypatch):
    w = sg.symbol("w")
    jobs = [("value", [("f", sg.sin(x) + y)]), ("both", [("f", sg.sin(x) + y),
                                                         ("g", sg.cos(w) * x)])]
    monkeypatch.setattr(sched, "DEFER_MIN_NODES", 0)
    with pytest.raises(ValueError, match="depends on 'w', which is not one of the arguments"):
        schedule_all(jobs, INPUTS, NAMES, comments=False)


def test_names_not_one_per_input_are_refused_by_the_walk_as_by_the_eager_path(monkeypatch):
    jobs = [("value", [("f", sg.sin(x) + y)])]
    for threshold in (0, 10**9):  # walked, eager
        monkeypatch.setattr(sched, "DEFER_MIN_NODES", threshold)
        with pytest.raises(ValueError, match="zip"):
            schedule_all(jobs, INPUTS, NAMES[:2], comments=False)


def test_at_the_real_threshold_a_big_gradient_is_walked_and_equals_the_eager_one(
        monkeypatch):
    f = _random_dag(4200, 7)  # an order of ~4,150 nodes
    eager, walked, made = _both(_gradient_jobs(f), monkeypatch,
                                threshold=sched.DEFER_MIN_NODES)
    assert made == 1 and len(sg.ir.traversal.topological_order([f])) > sched.DEFER_MIN_NODES
    _assert_same(eager, walked)


@pytest.mark.numba
@pytest.mark.parametrize("f", CASES[:2])
def test_tapes_of_walked_programs_equal_the_eager_ones(f, monkeypatch):
    from symgraph.backends.tape.builder import build_tape
    from symgraph.runtime.expression_cache import _TAPE_ARRAYS

    eager, walked, _ = _both(_gradient_jobs(f), monkeypatch)
    for e, w in zip(eager, walked, strict=True):
        te, tw = build_tape(e), build_tape(w)
        for name in _TAPE_ARRAYS:
            a, b = getattr(te, name), getattr(tw, name)
            assert a.dtype == b.dtype and np.array_equal(a, b), name
        assert te.n_registers == tw.n_registers
