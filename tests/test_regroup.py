"""ir.regroup.join_sums: a wide sum used only as a term of another sum is joined into it, so
like terms collect across per-observation sums (dirichlet_multinomial@688: 4,438 scheduled
operations -> 310); shared sums and everything else stay the nodes they were."""

from __future__ import annotations

import math
import random

import numpy as np

import symgraph as sg
from symgraph.ir.evaluate import count_ops, evaluate
from symgraph.ir.regroup import join_sums
from symgraph.ir.rules import FLATTEN_LIMIT, apply


def _observations(a, b, n: int, seed: int = 0):
    """A likelihood's shape: a sum of per-observation sums, each wider than FLATTEN_LIMIT,
    repeating a few lgamma terms."""
    rng = random.Random(seed)
    terms = []
    for _ in range(n):
        counts = rng.sample(range(FLATTEN_LIMIT + 4), FLATTEN_LIMIT + 2)  # distinct: wide
        terms.append(apply("add", *[rng.choice((1, 2)) * sg.lgamma(a + c) - sg.lgamma(b + c)
                                    for c in counts]))
    return apply("add", *terms)


def test_per_observation_sums_join_and_their_like_terms_collect_to_the_same_value():
    a, b = sg.symbols("a b")
    f = _observations(sg.exp(a), sg.exp(b) + 1, 60)
    [joined] = join_sums([f])
    # one sum of the distinct lgamma terms, each with its count; the 60 inner sums are gone
    assert joined.op == "add" and len(joined.args) <= 2 * (FLATTEN_LIMIT + 4)
    assert all(t.op != "add" for t in joined.args) and count_ops(joined) <= count_ops(f) - 60
    point = {a: 0.3, b: -0.7}
    assert math.isclose(evaluate(joined, point), evaluate(f, point), rel_tol=1e-13)


def test_sums_used_twice_or_by_other_ops_and_narrow_sums_stay_the_same_nodes():
    x, y = sg.symbols("x y")
    wide = apply("add", *[sg.sin(k * x) for k in range(1, FLATTEN_LIMIT + 3)])
    shared = apply("add", wide, sg.cos(y), wide * y)  # wide: a term here and a factor there
    f = sg.exp(x) + sg.log(1 + y * y)
    assert join_sums([shared]) == [shared]
    assert join_sums([f, wide]) == [f, wide]
    twice = apply("add", wide, sg.cos(y))  # an output used as a term: kept for the caller
    assert join_sums([twice, wide]) == [twice, wide]


def test_a_chain_of_ten_thousand_nested_sums_joins_without_recursion():
    x = sg.symbols("x")
    s = x
    for _ in range(10_000):
        s = apply("add", s, *[sg.sin(x + j) for j in range(FLATTEN_LIMIT)])
    [joined] = join_sums([s])
    assert joined.op == "add" and len(joined.args) == FLATTEN_LIMIT + 1  # 10,000 sin each
    assert math.isclose(evaluate(joined, {x: 0.25}), evaluate(s, {x: 0.25}), rel_tol=1e-9)


def test_compiled_per_observation_sums_schedule_fewer_steps_with_the_same_numbers():
    a, b = sg.symbols("a b")
    f = _observations(sg.exp(a), sg.exp(b) + 1, 40, seed=3)
    fn = sg.compile(f, [a, b], backend="python")
    assert fn.op_counts()["value"] < 200  # (each observation's sum apart: over 1,000)
    for point in ([0.3, -0.7], [1.1, 0.4]):
        value, grad = fn.value_and_grad(*point)
        at = dict(zip((a, b), point))
        assert math.isclose(value, evaluate(f, at), rel_tol=1e-12)
        h = 1e-6
        for i in range(2):
            up, down = list(point), list(point)
            up[i] += h
            down[i] -= h
            slope = (evaluate(f, dict(zip((a, b), up))) - evaluate(f, dict(zip((a, b), down))))
            assert math.isclose(grad[i], slope / (2 * h), rel_tol=1e-6)
    assert np.isfinite(fn.value_and_grad(np.array([[0.3, -0.7], [1.1, 0.4]]))[1]).all()
