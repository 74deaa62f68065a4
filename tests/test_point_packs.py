"""Packs (backends.numba.packs): a point kernel's independent calls of one vecmath function,
computed SIMD lanes at a time, give the unpacked kernel's numbers within an ulp per call, and
libm's bits where an argument is beyond vecmath's exact range; the steps keep a valid order."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symgraph as sg
from benchmarks import families
from symgraph.backends.numba import packs
from symgraph.lower.programs import build_programs
from symgraph.lower.steps import NAME

pytestmark = pytest.mark.numba


def _program(expr, args):
    """The value_grad program of `expr`, as the API makes it."""
    program = build_programs([expr], args, args)[1]
    assert program.name == "value_grad"
    return program


def _compiled(expr, args, path, packed: bool, monkeypatch):
    """`expr` compiled with packs (the default threshold) or without any (a huge one)."""
    with monkeypatch.context() as m:
        if not packed:
            m.setattr(packs, "MIN_MEMBERS", 10**9)
        fn = sg.compile(expr, args, cache_dir=str(path / ("packed" if packed else "plain")),
                        strategy="straight")
        fn.kernels("value_grad")
    source = open(str(fn).rsplit(": ", 1)[1][:-1], encoding="utf-8").read()
    assert ("value_grad_packs = (" in source) == packed  # the A/B is of what it says
    return fn


def _both(fn, point):
    value, gradient = fn.value_and_grad_floats(*point)
    got, also = np.array([value, *gradient]), fn.value_and_grad(*point)
    also = np.array([also[0], *also[1]])  # NAME_point: the same packs, the same bits (but a
    number = ~np.isnan(got)  # nan's sign: x86 keeps the first operand's nan of two)
    assert got[number].tobytes() == also[number].tobytes() and np.isnan(also[~number]).all()
    return got


def _ulps(a, b):
    """|a - b| in units of the last place of the larger (nan and inf where both are)."""
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    scale = np.spacing(np.maximum(np.abs(a), np.abs(b)))
    with np.errstate(invalid="ignore"):  # inf - inf where only one is inf: nan, not <= 1
        return np.where(same, 0.0, np.abs(a - b) / scale)


def test_independent_sin_and_cos_of_one_operand_pack_as_sincos_and_a_chain_does_not():
    xs = sg.symbols("a b c d e f g h i")
    chain = sg.exp(sg.sin(sg.log(sg.cos(xs[0] + 1) + 2)))  # each call needs the previous
    found = packs.packs(_program(sum(sg.sin(x) * x for x in xs), xs))
    assert [(f, len(m)) for f, m in found] == [("vsincos", 9)]
    assert all(len(member) == 2 for member in found[0][1])
    assert packs.packs(_program(chain, xs[:1])) == []


def test_a_pack_past_max_members_splits_into_packs_of_at_least_min_members(monkeypatch):
    monkeypatch.setattr(packs, "MAX_MEMBERS", 10)
    monkeypatch.setattr(packs, "MIN_MEMBERS", 4)
    xs = [sg.symbols(f"x{i}") for i in range(23)]
    found = packs.packs(_program(sum(sg.exp(x) * x for x in xs), xs))
    assert [(f, len(m)) for f, m in found] == [("vexp", 10), ("vexp", 13)]  # 3 join the last
    assert len({t for _, m in found for member in m for t in member}) == 23


@pytest.mark.parametrize("name", ["product_chain@33", "gibbs_mixing@25", "pendulum_chain@7",
                                  "weibull@14"])
def test_packed_order_reads_every_name_after_its_step_and_keeps_every_step(name):
    family, n = families.parse_name(name)
    expr, args = family.make(n)
    program = _program(expr, args)
    found = packs.packs(program)
    assert found  # (the workload has packs: the order below is a packed one)
    ordered = packs.packed_order(program, found)
    assert sorted(ordered.steps) == sorted(program.steps)
    defined = set(program.inputs)
    for step in ordered.steps:
        assert all(o.value in defined for o in step.operands if o.kind == NAME)
        defined.add(step.target)
    position = {s.target: k for k, s in enumerate(ordered.steps)}
    for _, members in found:  # a pack's steps stand together
        places = sorted(position[t] for member in members for t in member)
        assert places == list(range(places[0], places[0] + len(places)))


EDGES = [0.0, -0.0, 1e-310, -1e-310, 1.5, -2.5, 1e8, -3e15, 1e300, math.inf, -math.inf,
         math.nan, 700.0, 710.0, -746.0, 800.0, -1.0, 2.2250738585072014e-308]


@pytest.mark.parametrize("function", ["sin", "cos", "exp"])
def test_a_packed_call_is_within_an_ulp_of_libm_and_libms_bits_beyond_its_range(
        function, tmp_path, monkeypatch):
    # f = sum g(x_i): the gradient is g'(x_i), one packed call each (cos, -sin, exp): a pack
    # of 10 (at least packs.MIN_MEMBERS), two vectors' loop with padding lanes
    xs = sg.symbols(" ".join(f"x{i}" for i in range(10)))
    expr = sum(getattr(sg, function)(x) for x in xs)
    packed = _compiled(expr, xs, tmp_path, True, monkeypatch)
    plain = _compiled(expr, xs, tmp_path, False, monkeypatch)
    rng = np.random.default_rng(20)
    points = [EDGES[k:k + 10] for k in range(0, len(EDGES) - 9)] + [
        list(rng.uniform(-50, 50, 10)) for _ in range(200)]
    for point in points:
        got, want = _both(packed, point)[1:], _both(plain, point)[1:]
        assert np.all(_ulps(got, want) <= 1.0), (point, got, want)
        far = ~(np.abs(np.array(point)) <= 5e7)  # beyond vecmath's sin/cos range: libm's bits
        if function != "exp":
            assert got[far].tobytes() == want[far].tobytes(), point


@pytest.mark.parametrize("name", ["product_chain@33", "gibbs_mixing@25", "pendulum_chain@7",
                                  "weibull@14", "trig_series@12"])
def test_packed_point_kernels_give_the_unpacked_numbers_on_generated_families(
        name, tmp_path, monkeypatch):
    family, n = families.parse_name(name)
    expr, args = family.make(n)
    packed = _compiled(expr, args, tmp_path, True, monkeypatch)
    plain = _compiled(expr, args, tmp_path, False, monkeypatch)
    low, high = family.box(len(args))
    rng = np.random.default_rng(7)
    points = [rng.uniform(low, high) for _ in range(50)]
    points += [np.where(rng.random(len(args)) < 0.3, v, p)  # arguments beyond the range too
               for v in (1e9, -4e16, math.inf, math.nan, 0.0, -1.0) for p in points[:3]]
    for point in points:
        got, want = _both(packed, list(point)), _both(plain, list(point))
        assert np.array_equal(np.isnan(got), np.isnan(want)), point
        finite = np.isfinite(want)
        assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
        scale = np.max(np.abs(want[finite]), initial=1.0)  # a sum's cancellation: its terms'
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-13, atol=1e-13 * scale)
