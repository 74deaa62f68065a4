"""The special functions (symgraph.ir.special, op table entries gamma ... xlogy): accuracy in
ulps against mpmath on their documented domains (docs/functions.md states the bounds), SciPy's
values at poles and edges, derivatives of every order against SymPy, and Numba's compiled
functions giving the Python ones' bits.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy as sp

import symgraph as sg
from symgraph.frontends.sympy_bridge import to_sympy
from symgraph.ir import special
from symgraph.ir.evaluate import evaluate

mpmath.mp.dps = 40
RNG_SEED = 19
POINTS = 200  # per function and domain: the worst case over them is what the bound says


def ulps(got: float, want: mpmath.mpf) -> float:
    want_float = float(want)
    if want_float == 0.0:
        return 0.0 if got == 0.0 else math.inf
    return abs(mpmath.mpf(got) - want) / math.ulp(want_float)


def uniform(low, high):
    return lambda rng: float(rng.uniform(low, high))


def log_uniform(low, high):
    return lambda rng: float(10.0 ** rng.uniform(math.log10(low), math.log10(high)))


def _erfcinv_reference(z):
    # mpmath has no erfcinv; the root of log(erfc(t)) = log(z) near our value (any start
    # close enough converges to the one root).
    start = special.erfcinv(float(z))
    return mpmath.findroot(lambda t: mpmath.log(mpmath.erfc(t)) - mpmath.log(z), start)


# (function, reference, argument samplers, documented bound in ulps): docs/functions.md.
CASES = {
    "gamma": (special.gamma, mpmath.gamma, [uniform(0.01, 170.0)], 1),
    "lgamma": (special.lgamma, mpmath.loggamma, [log_uniform(1e-3, 1e5)], 1),
    "lgamma_wide": (special.lgamma, mpmath.loggamma, [log_uniform(1e-300, 2.5e305)], 1),
    "lgamma_zeros": (special.lgamma, mpmath.loggamma, [uniform(0.5, 2.5)], 1),
    "digamma": (special.digamma, mpmath.digamma, [log_uniform(1e-6, 1e6)], 1),
    "digamma_root": (special.digamma, mpmath.digamma, [uniform(1.3, 1.6)], 1),
    "digamma_wide": (special.digamma, mpmath.digamma, [log_uniform(1e-300, 1e300)], 1),
    "polygamma1": (lambda x: special.polygamma(1.0, x), lambda x: mpmath.polygamma(1, x),
                   [log_uniform(1e-3, 1e4)], 1),
    "polygamma2": (lambda x: special.polygamma(2.0, x), lambda x: mpmath.polygamma(2, x),
                   [log_uniform(1e-3, 1e4)], 1),
    "polygamma3": (lambda x: special.polygamma(3.0, x), lambda x: mpmath.polygamma(3, x),
                   [log_uniform(1e-3, 1e4)], 1),
    "beta": (special.beta, mpmath.beta, [uniform(0.05, 50.0), uniform(0.05, 50.0)], 1),
    "lbeta": (special.lbeta, lambda a, b: mpmath.log(mpmath.beta(a, b)),
              [uniform(0.05, 0.5), uniform(0.05, 0.5)], 1),
    "erfinv": (special.erfinv, mpmath.erfinv, [uniform(-1.0, 1.0)], 2),
    "erfcinv": (special.erfcinv, _erfcinv_reference, [log_uniform(1e-300, 2.0)], 2),
    "xlogy": (special.xlogy, lambda x, y: x * mpmath.log(y),
              [uniform(-5.0, 5.0), log_uniform(1e-3, 1e3)], 2),
}


def compiled(name: str):
    """The Numba-compiled function of a case (what Numba kernels and the tape call)."""
    from symgraph.backends.numba import special as numba_special

    base = name.rstrip("0123456789").split("_")[0]  # "polygamma2", "lgamma_zeros"
    jitted = getattr(numba_special, f"_sf_{base}")
    if base == "polygamma":
        order = float(name[len(base):])
        return lambda x: jitted(order, x)
    return jitted


@pytest.mark.parametrize("backend", ["python", "numba"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_ulp_error_against_mpmath_within_the_documented_bound(name, backend):
    function, reference, samplers, bound = CASES[name]
    if backend == "numba":  # Numba's math.gamma/lgamma/erf are its own: bits may differ
        function = compiled(name)
    rng = np.random.default_rng(RNG_SEED)
    worst, at = 0.0, None
    for _ in range(POINTS):
        args = [draw(rng) for draw in samplers]
        error = ulps(function(*args), reference(*[mpmath.mpf(a) for a in args]))
        if error > worst:
            worst, at = error, args
    assert worst <= bound, (name, worst, at)


@pytest.mark.parametrize("kind", ["besselj", "bessely"])
@pytest.mark.parametrize("order", [0, 1, 5, 20])
def test_bessel_error_is_an_ulp_up_to_200_and_a_few_ulps_of_the_envelope_beyond(kind, order):
    # Up to |x| = 200 (Miller's recurrence and the Neumann series in double-double) the error
    # is relative, zeros included; beyond, Hankel's expansion in doubles: near a zero its
    # relative error is unbounded, so the bound is in ulps of the envelope
    # max(|f|, sqrt(2 / (pi x)) / 4).
    function = getattr(special, kind)
    reference = mpmath.besselj if kind == "besselj" else mpmath.bessely
    rng = np.random.default_rng(RNG_SEED + order)
    worst_relative = worst_envelope = 0.0
    for _ in range(40):  # mpmath's Bessel functions are slow
        x = float(rng.uniform(0.05 if kind == "bessely" else -200.0, 200.0))
        worst_relative = max(worst_relative, ulps(function(float(order), x),
                                                  reference(order, mpmath.mpf(x))))
        x = float(rng.uniform(200.0, 2000.0))
        want = reference(order, mpmath.mpf(x))
        scale = max(abs(float(want)), math.sqrt(2.0 / (math.pi * x)) / 4.0)
        worst_envelope = max(worst_envelope, float(
            abs(mpmath.mpf(function(float(order), x)) - want)) / math.ulp(scale))
    assert worst_relative <= 1, (kind, order, worst_relative)
    assert worst_envelope <= 6, (kind, order, worst_envelope)


@pytest.mark.parametrize("kind", ["besselj", "bessely"])
def test_bessel_at_tiny_arguments_is_mpmaths_down_to_underflow_and_overflow(kind):
    # Below special_bessel.SMALL the series' first terms: Miller's recurrence would overflow
    # there (it gave nan at x = 8.8e-140, the gradient of besselj(3, x) too), and Y's upward
    # recurrence ends in -inf where Y_n overflows, never in inf - inf.
    function = getattr(special, kind)
    reference = mpmath.besselj if kind == "besselj" else mpmath.bessely
    for order in (0, 1, 2, 3, 10, -3):
        for x in (5e-324, 2e-310, 1e-300, 8.8e-140, 1e-100, 1e-30, 9.99e-9, 1.0001e-8):
            got, want = function(float(order), x), float(reference(order, mpmath.mpf(x)))
            if abs(want) < 1e-300 or math.isinf(want):  # subnormal or past the range
                assert got == pytest.approx(want, abs=1e-300), (kind, order, x)
            else:
                assert ulps(got, reference(order, mpmath.mpf(x))) <= 2, (kind, order, x, got)


# -- SciPy's values at poles and edges ----------------------------------------------------

INF, NAN = math.inf, math.nan
EDGES = [
    ("gamma", (0.0,)), ("gamma", (-0.0,)), ("gamma", (-1.0,)), ("gamma", (-2.5,)),
    ("gamma", (INF,)), ("gamma", (-INF,)), ("gamma", (NAN,)), ("gamma", (171.7,)),
    ("gamma", (-171.5,)), ("gamma", (-190.5,)),
    ("lgamma", (0.0,)), ("lgamma", (-1.0,)), ("lgamma", (-2.5,)), ("lgamma", (INF,)),
    ("lgamma", (-INF,)), ("lgamma", (1.0,)), ("lgamma", (2.0,)),
    ("digamma", (0.0,)), ("digamma", (-0.0,)), ("digamma", (-1.0,)), ("digamma", (-2.5,)),
    ("digamma", (INF,)), ("digamma", (-INF,)), ("digamma", (NAN,)),
    ("polygamma", (1.0, 0.0)), ("polygamma", (2.0, -1.0)), ("polygamma", (3.0, -2.5)),
    ("polygamma", (1.0, INF)), ("polygamma", (2.0, INF)), ("polygamma", (1.0, 1e-300)),
    ("polygamma", (0.5, 1.0)), ("polygamma", (0.0, 2.0)),
    ("beta", (0.0, 1.0)), ("beta", (-1.0, 2.0)), ("beta", (-0.5, 2.0)), ("beta", (INF, 1.0)),
    ("beta", (NAN, 1.0)), ("beta", (-1.5, 0.5)),
    ("lbeta", (0.0, 1.0)), ("lbeta", (-0.5, 2.0)), ("lbeta", (INF, 1.0)),
    ("erfinv", (1.0,)), ("erfinv", (-1.0,)), ("erfinv", (1.5,)), ("erfinv", (-0.0,)),
    ("erfcinv", (0.0,)), ("erfcinv", (2.0,)), ("erfcinv", (-1.0,)), ("erfcinv", (1.0,)),
    ("besselj", (0.0, 0.0)), ("besselj", (1.0, 0.0)), ("besselj", (-1.0, -2.0)),
    ("besselj", (0.0, INF)), ("besselj", (2.0, NAN)), ("besselj", (0.5, 1.0)),
    ("bessely", (0.0, 0.0)), ("bessely", (-1.0, 0.0)), ("bessely", (1.0, -1.0)),
    ("bessely", (2.0, INF)),
    ("xlogy", (0.0, 0.0)), ("xlogy", (0.0, NAN)), ("xlogy", (NAN, 0.0)), ("xlogy", (0.0, -1.0)),
    ("xlogy", (1.0, 0.0)), ("xlogy", (2.0, -1.0)),
]


def scipy_function(name):
    scipy_special = pytest.importorskip("scipy.special")
    return {"gamma": scipy_special.gamma, "lgamma": scipy_special.gammaln,
            "digamma": scipy_special.psi, "polygamma": scipy_special.polygamma,
            "beta": scipy_special.beta, "lbeta": scipy_special.betaln,
            "erfinv": scipy_special.erfinv, "erfcinv": scipy_special.erfcinv,
            "besselj": scipy_special.jv, "bessely": scipy_special.yv,
            "xlogy": scipy_special.xlogy}[name]


def same(a: float, b: float) -> bool:
    if math.isnan(b):
        return math.isnan(a)
    return a == b and (a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b)) or (
        math.isfinite(b) and math.isclose(a, b, rel_tol=1e-14))


@pytest.mark.parametrize("name, args", EDGES)
def test_edge_values_are_scipys(name, args):
    want = float(scipy_function(name)(*args))
    if name in ("polygamma", "besselj") and args[0] != math.floor(args[0]):
        want = NAN  # symgraph's orders are integers only (SciPy's jv takes any)
    assert same(getattr(special, name)(*args), want), (name, args, want)
    folded = sg.apply(name, *args)  # constant folding gives the same value
    assert folded.is_const and same(folded.value, want)


# -- derivatives to any order, against SymPy -------------------------------------------------

SECOND = [("gamma", "gamma(x)", 1.7), ("lgamma", "lgamma(x)", 2.3),
          ("digamma", "digamma(x)", 0.8), ("polygamma", "polygamma(2, x)", 1.9),
          ("beta", "beta(x, 1.5)", 0.7), ("lbeta", "lbeta(2.5, x)", 1.2),
          ("erfinv", "erfinv(x)", 0.3), ("erfcinv", "erfcinv(x)", 1.4),
          ("besselj", "besselj(2, x)", 1.1), ("bessely", "bessely(1, x)", 2.2),
          ("xlogy", "xlogy(x, x + 1)", 0.6)]


@pytest.mark.parametrize("name, text, at", SECOND, ids=[c[0] for c in SECOND])
def test_third_derivative_matches_sympys(name, text, at):
    x = sg.symbol("x")
    node = sg.parse(text)
    xs = sp.Symbol("x", real=True)
    expr = to_sympy(node, {"x": xs})
    for order in (1, 2, 3):
        node = sg.diff(node, x)
        want = float(sp.N(sp.diff(expr, xs, order).subs(xs, sp.Float(at)), 30))
        got = float(evaluate(node, {"x": at}))
        assert math.isclose(got, want, rel_tol=1e-11, abs_tol=1e-13), (name, order, got, want)


# -- Numba gives the Python functions' numbers -------------------------------------------------


def test_numba_special_functions_agree_with_the_python_ones_within_their_bounds():
    # Numba's math.lgamma/erf are libm's, CPython's its own: where special calls them (lgamma
    # above 90, erfinv's Halley steps) the two may differ by the sum of both bounds.
    from symgraph.backends.numba import special as compiled

    rng = np.random.default_rng(RNG_SEED)
    for name, function in special.SCALAR.items():
        jitted = getattr(compiled, f"_sf_{name}")
        arity = 2 if name in ("polygamma", "beta", "lbeta", "besselj", "bessely", "xlogy") else 1
        for _ in range(20):
            args = [float(rng.integers(0, 4)) if arity == 2 and name in (
                "polygamma", "besselj", "bessely") else float(rng.uniform(0.05, 0.95))]
            if arity == 2:
                args.append(float(rng.uniform(0.1, 30.0)))
            want, got = function(*args), jitted(*args)
            assert got == want or (math.isnan(got) and math.isnan(want)) or abs(
                got - want) <= 16 * math.ulp(max(abs(want), 1.0)), (name, args, got, want)
