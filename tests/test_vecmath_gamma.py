"""symgraph.backends.numba.vecmath_gamma (vlgamma, vdigamma): accuracy against mpmath, relative
at lgamma's zeros and digamma's root, the same algorithm as the scalar lgamma, the range flag,
packed instructions, and the fix-up of flagged values in lane kernels and the tape."""

from __future__ import annotations

import math
import re

import mpmath
import numba
import numpy as np
import pytest

import symgraph as sg
from symgraph.backends.numba import vecmath as vm
from symgraph.backends.numba import vecmath_gamma as vg
from symgraph.ir import special
from tests.test_vecmath import _LOOPS, _host_has_avx2, apply, log_uniform, max_ulp

RNG_SEED = 20261203
ROOT = 1.4616321449683622  # digamma's positive root


def positive_sample(rng) -> np.ndarray:
    """Every piece of the two functions (x < 1, [1, 2), [2, 3), the series from 3), their
    joins, lgamma's zeros and digamma's root up close, and the whole normal range."""
    near = [1.0, 2.0, 3.0, ROOT]
    close = [c + rng.uniform(-1, 1, 150) * 10.0 ** rng.uniform(-15, -1, 150) for c in near]
    return np.concatenate([rng.uniform(0.0, 4.0, 1500), rng.uniform(3.0, 30.0, 400),
                           log_uniform(rng, 2.3e-308, vm.GAMMA_LIMIT, 1500), *close,
                           [0.5, 1.5, 2.5, 1.0, 2.0, 3.0, np.nextafter(3.0, 0.0), 1e300]])


def _loggamma(x):
    return mpmath.re(mpmath.loggamma(x))


@pytest.mark.parametrize("name,exact", [("vlgamma", _loggamma), ("vdigamma", mpmath.digamma)])
def test_vlgamma_vdigamma_within_one_ulp_of_mpmath_relative_at_zeros_and_root(name, exact):
    # max_ulp is relative to the exact value: near lgamma(1) = lgamma(2) = 0 and digamma's
    # root an absolute error of 1e-16 would be millions of ulps.
    x = positive_sample(np.random.default_rng(RNG_SEED))
    err, where = max_ulp(name, x, exact)
    assert err < 1.0, (err, where)
    assert apply(name, np.array([1.0, 2.0]))[0] == 0.0 or name == "vdigamma"


def test_vlgamma_is_the_scalar_lgammas_algorithm_within_an_ulp():
    x = positive_sample(np.random.default_rng(RNG_SEED + 1))
    np.testing.assert_array_max_ulp(apply("vlgamma", x), [special.lgamma(v) for v in x], 1)


def test_vdigamma_is_the_scalar_digammas_algorithm_within_an_ulp():
    x = positive_sample(np.random.default_rng(RNG_SEED + 2))
    np.testing.assert_array_max_ulp(apply("vdigamma", x), [special.digamma(v) for v in x], 1)


@numba.njit
def _pair_and_branching(x, out):
    for j in range(x.size):
        out[0, j], out[1, j] = vm.vlgamma_digamma(x[j])
        out[2, j] = vg.lgamma_branching(x[j])
        out[3, j] = vg.digamma_branching(x[j])


def test_the_pair_and_the_branching_scalar_forms_give_vlgamma_and_vdigammas_bits():
    # Packs compute lgamma(u) with its digamma(u) as one pair, and row kernels call the
    # branching forms (one piece for one value): both must be the lane kernels' numbers.
    x = positive_sample(np.random.default_rng(RNG_SEED + 4))
    out = np.empty((4, x.size))
    _pair_and_branching(x, out)
    lgamma, digamma = apply("vlgamma", x), apply("vdigamma", x)
    for got, want in zip(out, (lgamma, digamma, lgamma, digamma)):
        assert got.tobytes() == want.tobytes()


def test_vgammaoff_flags_exactly_what_the_lanes_leave_to_the_scalar_functions():
    off = [-1.0, -0.5, -1e-300, 0.0, -0.0, 5e-324, 2.2e-308, math.inf, -math.inf, math.nan,
           1.0000000000000001e305]
    on = [2.2250738585072014e-308, 1e-300, 0.5, 1.0, 2.0, 3.0, 1e17, vm.GAMMA_LIMIT]
    assert all(vm.vgammaoff(v) for v in off)
    assert not any(vm.vgammaoff(v) for v in on)


@pytest.mark.skipif(not _host_has_avx2(), reason="needs a CPU with AVX2")
@pytest.mark.parametrize("name", ["vlgamma", "vdigamma"])
def test_loops_over_vlgamma_vdigamma_compile_to_packed_instructions_without_calls(name):
    apply(name, np.linspace(0.1, 9.0, 64))
    run = _LOOPS[name]
    asm = run.inspect_asm(run.signatures[0])
    assert len(re.findall(r"\bvfmadd\w*pd\s+[^\n]*%[yz]mm", asm)) >= 16
    assert not re.search(r"call[^\n]*(log|gamma)", asm)


FLAGGED = [-0.5, -2.0, -3.7, 0.0, -0.0, 5e-324, 1e-310, math.inf, math.nan, 2e305]


@pytest.mark.parametrize("strategy", ["straight", "tape"])
def test_flagged_values_get_the_scalar_functions_bits_in_lane_kernels_and_the_tape(strategy):
    # Negative (reflection), subnormal, zero, inf, nan and near-overflow arguments are
    # recomputed with symgraph.ir.special's functions, however they share a block with others.
    x, y = sg.symbols("x y")
    expr = sg.lgamma(x) * y + sg.digamma(x)
    fn = sg.compile(expr, [x, y], strategy=strategy)
    rows = fn  # one point: the row kernel, or the tape's rows (scalar special functions)
    assert strategy == "tape" or "vlgamma(" in fn.source  # its lane kernel calls vlgamma
    rng = np.random.default_rng(RNG_SEED + 3)
    X = np.c_[rng.uniform(0.05, 12.0, 300), rng.uniform(0.5, 2.0, 300)]
    where = np.arange(len(FLAGGED)) * 13 + 5
    X[where, 0] = FLAGGED
    with np.errstate(all="ignore"):
        value, grad = fn.value_and_grad(X)
        for i in where:
            v, g = rows.value_and_grad(X[i])
            assert (value[i] == v or (math.isnan(value[i]) and math.isnan(v))), (X[i], value[i], v)
            np.testing.assert_array_equal(grad[i], g)
        ok = np.setdiff1d(np.arange(X.shape[0]), where)
        want = np.array([rows.value_and_grad(p)[0] for p in X[ok]])
    np.testing.assert_allclose(value[ok], want, rtol=1e-14)
