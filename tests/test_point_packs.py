"""Packs (backends.numba.packs): a point kernel's independent calls of one vecmath function,
computed SIMD lanes at a time, give the unpacked kernel's numbers within an ulp per call, and
libm's bits where an argument is beyond vecmath's exact range; the steps keep a valid order."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import symgraph as sg
from benchmarks import families
from symgraph.backends.numba import packs, simd
from symgraph.lower.programs import build_programs
from symgraph.lower.steps import NAME

pytestmark = pytest.mark.numba


def _program(expr, args):
    """The value_grad program of `expr`, as the API makes it."""
    program = build_programs([expr], args, args)[1]
    assert program.name == "value_grad"
    return program


def _compiled(expr, args, path, packed: bool, monkeypatch, width: int | None = None):
    """`expr` compiled with packs (the default threshold) or without any (a huge one); with
    `width`, lowered as for a CPU of that many doubles a vector (runtime.simd)."""
    with monkeypatch.context() as m:
        if not packed:
            m.setattr(packs, "MIN_MEMBERS", 10**9)
        if width is not None:
            m.setattr(simd, "vector_doubles", lambda: width)
            for name in [k for k in sys.modules if k.startswith("symgraph_generated_")]:
                m.delitem(sys.modules, name)  # the same text as another width's: its own kernels
        folder = path / (("packed" if packed else "plain") + f"{width or ''}")
        fn = sg.compile(expr, args, cache_dir=str(folder), strategy="straight")
        fn.kernels("value_grad")
        fn.value_and_grad_floats(*[1.0] * len(args))  # both point kernels compiled here
        fn.value_and_grad(*[1.0] * len(args))
    assert ("value_grad_packs = (" in fn.source) == packed  # the A/B is of what it says
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


def test_lgamma_and_its_digamma_of_one_operand_pack_as_one_pair():
    # The gradient of lgamma(u) is digamma(u): one member of a vlgamma_digamma pack, which
    # shares their reduction, log and reciprocal; a digamma alone stays a digamma.
    xs = sg.symbols("a b c")
    found = packs.packs(_program(sum(sg.lgamma(x + 1) * x for x in xs), xs))
    assert [(f, len(m)) for f, m in found] == [("vlgamma_digamma", 3)]
    assert all(len(member) == 2 for member in found[0][1])
    alone = packs.packs(_program(sum(sg.digamma(x) * x for x in xs), xs))
    assert [f for f, _ in alone] == ["vdigamma"]


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


@pytest.mark.parametrize("width", [4, 8])  # AVX2's loop (12 lanes) and AVX-512's (16)
@pytest.mark.parametrize("function", ["sin", "cos", "exp"])
def test_a_packed_call_is_within_an_ulp_of_libm_and_libms_bits_beyond_its_range(
        function, width, tmp_path, monkeypatch):
    # f = sum g(x_i): the gradient is g'(x_i), one packed call each (cos, -sin, exp): a pack
    # of 10 (run as a pack by every ISA's rule), whole vectors' loop with padding lanes
    xs = sg.symbols(" ".join(f"x{i}" for i in range(10)))
    expr = sum(getattr(sg, function)(x) for x in xs)
    packed = _compiled(expr, xs, tmp_path, True, monkeypatch, width)
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
                                  "weibull@14", "trig_series@12", "negbin_loglik@6",
                                  "beta_binomial@3"])
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


def test_a_module_lists_the_packs_some_isa_runs_and_no_smaller_one():
    assert (simd.fewest("vexp"), simd.fewest("vtanh"), simd.fewest("vsincos")) == (4, 2, 2)
    xs = sg.symbols("a b c")
    three = [(f, len(m)) for f, m in packs.packs(_program(
        sum(sg.exp(x) + sg.tanh(x) for x in xs), xs))]
    assert three == [("vtanh", 3)]  # 3 exps: a pack on no ISA, left in the row's order
    four = sg.symbols("a b c d")
    assert sorted((f, len(m)) for f, m in packs.packs(_program(
        sum(sg.exp(x) + sg.tanh(x) for x in four), four))) == [("vexp", 4), ("vtanh", 4)]


def test_pack_lanes_follow_the_vector_width_and_each_functions_break_even():
    assert [simd.pack_lanes("vexp", n, 8) for n in (2, 7, 8, 9, 17)] == [0, 0, 8, 16, 24]
    assert [simd.pack_lanes("vsincos", n, 8) for n in (2, 7, 8)] == [0, 0, 8]
    assert [simd.pack_lanes("vexp", n, 4) for n in (2, 3, 4, 5, 9)] == [0, 0, 8, 8, 12]
    assert [simd.pack_lanes("vtanh", n, 4) for n in (1, 2, 3, 5, 13)] == [0, 8, 8, 8, 16]
    assert [simd.pack_lanes("vlgamma", n, 4) for n in (1, 2, 4, 5)] == [0, 4, 4, 8]
    assert [simd.pack_lanes("vlgamma_digamma", n, w) for n in (1, 2, 9) for w in (4, 8)] == [
        0, 0, 4, 8, 12, 16]
    assert [simd.pack_lanes("vpow", n, w) for n in (2, 8) for w in (4, 8)] == [8, 0, 8, 8]
    assert [simd.pack_lanes("vsin", n, 2) for n in (2, 8, 64)] == [0, 0, 0]  # SSE: libm


@pytest.mark.parametrize(("features", "doubles"), [
    ("+avx,+avx2,+fma,+avx512f,+avx512dq", 8), ("+avx,+avx2,+fma,-avx512f", 4),
    ("+sse2,+avx,-avx2,-fma", 2), ("", 2)])
def test_vector_doubles_reads_the_features_numba_compiles_for(features, doubles, monkeypatch):
    from numba.core import config

    monkeypatch.setattr(config, "CPU_FEATURES", features)
    simd.vector_doubles.cache_clear()
    try:
        assert simd.vector_doubles() == doubles
    finally:
        simd.vector_doubles.cache_clear()  # the host's again, for what runs next


def test_a_small_pack_is_simd_on_avx2_and_libm_calls_on_avx512_from_the_same_text(
        tmp_path, monkeypatch):
    # 5 independent tanh (and their derivatives' reuse): a pack at AVX2's rule (costly
    # functions from 2 members), below AVX-512's 8: the same module text either way
    xs = sg.symbols(" ".join(f"x{i}" for i in range(5)))
    expr = sum(sg.tanh(x) * (k + 1.5) for k, x in enumerate(xs))
    avx2 = _compiled(expr, xs, tmp_path, True, monkeypatch, 4)
    avx512 = _compiled(expr, xs, tmp_path, True, monkeypatch, 8)
    plain = _compiled(expr, xs, tmp_path, False, monkeypatch)
    assert avx2.source == avx512.source and "'vtanh'" in avx2.source
    rng = np.random.default_rng(4)
    points = [list(rng.uniform(-3, 3, 5)) for _ in range(300)] + [
        [0.0, -0.0, 30.0, -1e-300, math.nan], [math.inf, -math.inf, 1e-8, 19.0, -20.0]]
    differs = False
    for point in points:
        want = _both(plain, point)
        libm, simd_ = _both(avx512, point), _both(avx2, point)
        number = ~np.isnan(want)  # libm's calls: the unpacked kernel's bits (a nan's sign aside)
        assert libm[number].tobytes() == want[number].tobytes() and np.isnan(libm[~number]).all()
        assert np.array_equal(np.isnan(simd_), ~number), point
        # vecmath's tanh within an ulp; 1 - tanh^2 (the gradient) magnifies it where tanh ~ 1
        np.testing.assert_allclose(simd_[number], want[number], rtol=1e-12, atol=1e-300)
        differs |= simd_.tobytes() != want.tobytes()
    assert differs  # (vecmath's tanh ran: not libm's bits everywhere)


@pytest.mark.parametrize("width", [4, 8])
def test_a_pow_pack_is_within_ulps_of_libm_pow_and_libms_bits_where_vpow_is_off(
        width, tmp_path, monkeypatch):
    # x_k ** e: one pack of 10 vpow calls (two operands); d/dx_k = (k + 1.5) e x_k**(e - 1),
    # pow_prev of the packed power: a few ulps of libm's, its bits where vpowoff holds
    xs = [sg.symbols(f"x{i}") for i in range(10)]
    e = sg.symbols("e")
    expr = sum((k + 1.5) * x**e for k, x in enumerate(xs))
    packed = _compiled(expr, [*xs, e], tmp_path, True, monkeypatch, width)
    assert "'vpow', 'vpowoff(x, y)'" in packed.source
    plain = _compiled(expr, [*xs, e], tmp_path, False, monkeypatch)
    rng = np.random.default_rng(3)
    edges = [0.0, -1.0, 1e-300, 1e300, math.inf, math.nan, 2.5, 1e-5, 0.5, 7.0]
    points = [[*rng.uniform(0.01, 20.0, 10), y] for y in rng.uniform(-6, 6, 150)] + [
        [*edges, y] for y in (1.7, -3.0, 40.0, 0.0, 1e300, math.nan)]
    for point in points:
        got, want = _both(packed, point)[1:11], _both(plain, point)[1:11]
        assert np.all(_ulps(got, want) <= 4.0), (point, got, want)
        x, y = np.array(point[:10]), point[10]
        with np.errstate(all="ignore"):
            off = ~(x > 0) | ~(x < math.inf) | (y != y) | (abs(y * np.log(x)) > 15.9)
        assert got[off].tobytes() == want[off].tobytes(), point
