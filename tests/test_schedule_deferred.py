"""lower.schedule's DeferredProgram (big orders: the Steps made from the codes on first use)
against the Programs the eager schedule makes of the same outputs: the same steps, outputs,
census and costs, equal and pickled as Programs, and the same tapes, built without making a
Step."""

from __future__ import annotations

import dataclasses
import pickle
import random

import numpy as np
import pytest

import symgraph as sg
from symgraph.ir.ops import OPS
from symgraph.lower import schedule as sched
from symgraph.lower.schedule import DeferredProgram, LazySteps, power_exponent, schedule_all

x, y, z = sg.symbols("x y z")
INPUTS, NAMES = [x, y, z], ["x", "y", "z"]


def _random_dag(size: int, seed: int) -> sg.Node:
    """Sums, products, quotients, negations, small and other powers, sin and cos of one
    operand, constants and sums wider than MAX_WIDTH."""
    rng = random.Random(seed)
    pool = [x, y, z, x - y]
    for _ in range(size):
        a, b = rng.choice(pool[-12:]), rng.choice(pool)
        kind = rng.randrange(9)
        node = (a + b if kind == 0 else a * sg.tanh(b) if kind == 1 else a - 2.5 * b
                if kind == 2 else sg.sin(a) * sg.cos(a) if kind == 3 else a ** 3 if kind == 4
                else a ** -2 if kind == 5 else sg.exp(-a) / (1.0 + b * b) if kind == 6
                else sg.atan(a) ** 1.5 if kind == 7 else -a)
        pool.append(node)
    return sg.apply("add", *pool[-3 * sched.MAX_WIDTH:]) + sg.apply("mul", *pool[-20:])


def _census_of_steps(program) -> dict:  # Program.census as it counted before the Encoding
    counts: dict = {}
    for s in program.steps:
        key = (s.op, len(s.operands), power_exponent(s) if s.op == "pow" else None)
        counts[key] = counts.get(key, 0) + 1
    return counts


def _jobs(f):
    gradient = sg.grad(f, INPUTS)
    value = [("f", f)]
    return [("value", value), ("value_grad", value + [(f"df_d{n}", g) for n, g in
                                                       zip(NAMES, gradient)])]


def _both(jobs, monkeypatch):
    monkeypatch.setattr(sched, "DEFER_MIN_NODES", 10**9)
    eager = schedule_all(jobs, INPUTS, NAMES, comments=False)
    monkeypatch.setattr(sched, "DEFER_MIN_NODES", 0)
    deferred = schedule_all(jobs, INPUTS, NAMES, comments=False)
    return eager, deferred


CASES = [_random_dag(60, 1), _random_dag(200, 2), _random_dag(40, 3) * sg.sin(x) - sg.cos(y),
         sg.apply("add", *[sg.sin(x * k) for k in range(1, 40)])]


@pytest.mark.parametrize("f", CASES)
def test_deferred_programs_make_the_steps_outputs_and_census_of_the_eager_schedule(
        f, monkeypatch):
    eager, deferred = _both(_jobs(f), monkeypatch)
    for e, d in zip(eager, deferred, strict=True):
        assert type(e) is sched.Program and type(d) is DeferredProgram
        assert "steps" not in vars(d)
        assert d.n_steps == e.n_steps == len(e.steps)
        assert d.outputs == e.outputs
        assert d.census == e.census == _census_of_steps(e)
        assert list(d.census) == list(_census_of_steps(e))  # the same order of first use
        assert (d.op_count, d.cost) == (e.op_count, e.cost)
        assert "steps" not in vars(d)  # counted from the codes
        assert list(LazySteps(d)) == list(e.steps)
        assert d.steps == e.steps and d == e and e == d and hash(d) == hash(e)
        assert pickle.loads(pickle.dumps(d)) == e
    assert deferred[0].n_steps < deferred[1].n_steps  # the value program: a prefix


def test_a_replaced_deferred_program_drops_its_encoding_for_other_steps(monkeypatch):
    _, (value, whole) = _both(_jobs(CASES[0]), monkeypatch)
    assert whole.encoded is not None
    cut = dataclasses.replace(whole, steps=whole.steps[:-1], outputs=whole.outputs[:1])
    assert cut.encoded is None and cut.steps == whole.steps[:-1]
    same = dataclasses.replace(whole, name="again")
    assert same.encoded is None and same.steps == whole.steps  # (the names are looked up)


@pytest.mark.numba
@pytest.mark.parametrize("f", CASES[:3])
def test_tapes_of_deferred_programs_equal_the_eager_ones_and_make_no_step(f, monkeypatch):
    from symgraph.backends.tape.builder import build_tape
    from symgraph.runtime.expression_cache import _TAPE_ARRAYS

    eager, deferred = _both(_jobs(f), monkeypatch)
    for e, d in zip(eager, deferred, strict=True):
        te, td = build_tape(e), build_tape(d)
        assert "steps" not in vars(d)  # built from the codes alone
        assert isinstance(td.steps, LazySteps) and len(td.steps) == len(e.steps)
        for name in _TAPE_ARRAYS:
            a, b = getattr(te, name), getattr(td, name)
            assert a.dtype == b.dtype and np.array_equal(a, b), name
        assert te.n_registers == td.n_registers
        assert tuple(td.steps) == e.steps


def test_a_sums_terms_come_in_the_order_their_values_are_made(monkeypatch):
    # The gradient of sum_k ((c_k - x) e^-y)^2 sums products made from each term's forward
    # values: every sum of three or more operands lists its terms in the order their last
    # operand was made (a lane kernel then adds each term as it comes; a costly one where it
    # is made), inputs and constants after them; the deferred schedule makes the same order.
    f = sg.apply("add", *[((0.3 * k - x) * sg.exp(-y)) ** 2 + z for k in range(9)])
    eager, deferred = _both(_jobs(f), monkeypatch)
    p = eager[1]
    at = {s.target: k for k, s in enumerate(p.steps)}
    late = len(p.steps)

    def made_at(operand) -> int:
        if operand.kind != "name" or operand.value not in at:
            return late  # an input or a constant
        step = p.steps[at[operand.value]]
        if step.op == "neg":
            if step.operands[0].value not in at:
                return late
            step = p.steps[at[step.operands[0].value]]
        if OPS[step.op].cost > 1:
            return at[step.target]  # a costly term: where it is made
        names = [o.value for o in step.operands if o.kind == "name"]
        names = [p.steps[at[n]].operands[0].value if n in at and p.steps[at[n]].op == "neg"
                 else n for n in names]
        return max((at[n] for n in names if n in at), default=at[step.target])

    sums = [s for s in p.steps if s.op == "add" and len(s.operands) > 2]
    assert len(sums) >= 3
    for s in sums:
        terms = [o for o in s.operands if not (o.kind == "name" and o.value in at
                                               and p.steps[at[o.value]].op == "add")]
        keys = [made_at(o) for o in terms]
        assert keys == sorted(keys), s
    assert [d.steps for d in deferred] == [e.steps for e in eager]
