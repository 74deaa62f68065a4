"""Special functions as plain Python on floats: gamma, lgamma, digamma, polygamma, beta, lbeta,
erfinv, erfcinv, besselj, bessely (integer order) and xlogy, with SciPy's values at poles and
edges (``scipy.special``), each also NumPy-vectorised (``*_np``) for the Python batch path.

The scalar functions use only ``math``, float arithmetic and loops, so
`symgraph.backends.numba.special` compiles the very same functions with ``@njit``: every
backend computes the same numbers. Methods (errors measured against mpmath, tests/test_special.py
and docs/functions.md):

* gamma (x > 0), beta, lbeta: in double-double (`.special_gamma`): the recurrence to [1, 2)
  and a Taylor series about 1.5; beta the gamma ratio corrected for the rounding of a + b.
* lgamma (x > 0, `.special_lgamma`): the vector lgamma's algorithm, one step of the recurrence
  to [1, 2) and (t - 1)(t - 2) R(t) there (relative accuracy at the zeros 1 and 2), Stirling
  from 3 on, in double-double. Elsewhere ``math.gamma`` / ``math.lgamma``, poles and overflow
  as SciPy.
* digamma (x > 0, `.special_lgamma`): the vector digamma's algorithm, one step of the
  recurrence to [1, 2), (t - x0) Q(t) there (relative accuracy at the root x0), the asymptotic
  series from 3 on, in double-double; the reflection below 0.
* polygamma(n, x), n >= 1: the recurrence up to x >= 15 + n, then the asymptotic series (all
  terms of one sign: no cancellation); in double-double for n <= 20 and x > 0.
* erfinv, erfcinv (`.special_erf`): Giles' approximation, then Halley steps on erf (or erfc).
* besselj, bessely (`.special_bessel`): Miller's backward recurrence and the Neumann series
  for |x| <= 200 (in double-double), Hankel's expansion beyond. Non-integer orders give nan.
"""

from __future__ import annotations

import math

import numpy as np

from .special_bessel import besselj, bessely
from .special_erf import erfcinv, erfinv
from .special_gamma import (
    BERNOULLI,
    _floor,
    dd_add,
    dd_div,
    dd_log,
    dd_mul,
    gamma_dd,
    polygamma_positive,
)
from .special_lgamma import digamma_positive, lgamma_positive

INF, NAN = math.inf, math.nan
EULER = 0.5772156649015329
GAMMA_OVERFLOW = 171.624376956302  # gamma(x) is inf above

def _is_pole(x):
    return x <= 0.0 and x == _floor(x)


def gamma(x):
    """Gamma; SciPy's edges: +-inf at +-0, nan at negative integers and -inf."""
    if x != x or x == -INF:
        return NAN
    if x == 0.0:
        return math.copysign(INF, x)
    if _is_pole(x):
        return NAN
    if x > GAMMA_OVERFLOW:
        return INF
    if abs(x) < 1e-17:  # 1/x - euler + O(x) (math.gamma overflows for subnormal x)
        return 1.0 / x - EULER
    if x < -180.0:  # underflows; the sign alternates between poles
        return 0.0 if _floor(-x) % 2.0 == 1.0 else -0.0
    if x > 0.0:  # in double-double: libm's gamma is off by up to ~7 ulps
        hi, lo, scale = gamma_dd(x)
        return (hi + lo) * scale
    value = math.gamma(x)
    if abs(value) < 2.2250738585072014e-308:  # SciPy flushes subnormal results to zero
        return math.copysign(0.0, value)
    return value


LGAMMA_OVERFLOW = 2.5599833278516383e305  # the largest x whose log|gamma(x)| is finite


def lgamma(x):
    """log|gamma(x)|; SciPy's edges: inf at poles, -inf at -inf."""
    if x != x:
        return NAN
    if x == INF:
        return INF
    if x == -INF:
        return -INF
    if _is_pole(x) or x > LGAMMA_OVERFLOW:  # CPython raises past it; libm gives inf
        return INF
    if 0.0 < x < 2.2250738585072014e-308:  # as SciPy's (the true value is finite)
        return INF
    if x > 0.0:  # the vector lgamma's algorithm (vecmath_gamma): the same numbers
        return lgamma_positive(x)
    return math.lgamma(x)


def digamma(x):
    """psi(x) = gamma'(x) / gamma(x); SciPy's edges: -inf at +0, +inf at -0, nan at negative
    integers and -inf."""
    if x != x or x == -INF:
        return NAN
    if x == INF:
        return INF
    if x == 0.0:
        return -math.copysign(INF, x)
    if _is_pole(x):
        return NAN
    if x < 0.0:  # reflection: psi(1 - x) - pi cot(pi x), the cotangent of x's fraction
        # x's distance to the nearest integer, exactly: tan of it keeps its accuracy near the
        # poles (tan(pi x) itself loses pi x's rounding)
        fraction = x - _floor(x + 0.5)
        return digamma_positive(1.0 - x) - math.pi / math.tan(math.pi * fraction)
    if x < 2.2250738585072014e-308:  # subnormal: -1/x overflows, as SciPy's
        return -1.0 / x
    return digamma_positive(x)


def polygamma(n, x):
    """The n-th derivative of digamma (n a non-negative integer; else nan). SciPy's edges:
    (-1)**(n+1) inf at non-positive integers, 0 at inf."""
    if n != n or x != x or n < 0.0 or n != _floor(n):
        return NAN
    if n == 0.0:
        return digamma(x)
    if n > 170.0:  # n! overflows
        return INF if x == x else NAN
    k = int(n)
    sign = 1.0 if k % 2 == 1 else -1.0
    if _is_pole(x):
        return sign * INF
    if x == INF:
        return sign * 0.0
    if x == -INF or x < -1e5:  # far below 0: the recurrence would run long (documented)
        return NAN
    m = max(0, int(math.ceil(15.0 + n - x)))
    if x > 0.0 and k <= 20 and (k + 1) * math.log(x) > -575.0:  # in double-double
        return sign * polygamma_positive(k, x, m)
    factorial = math.gamma(n + 1.0)
    # psi_n(x) = (-1)**(n+1) n! [sum_{j<m} (x + j)**-(n+1) + tail(x + m)], x + m >= 15 + n,
    # tail(z) = 1/(n z**n) + 1/(2 z**(n+1)) + sum_k B2k (2k+n-1)!/((2k)! n!) z**-(2k+n); the
    # terms, all of one sign for x > 0, added smallest first.
    z = x + m
    inverse = 1.0 / z
    inverse2 = inverse * inverse
    power = z ** -(k + 2)  # one rounding: a power of a rounded 1/z would grow n-fold
    ratio = (n + 1.0) / 2.0  # (2k + n - 1)! / ((2k)! n!) for k = 1
    series = 0.0
    for j in range(1, 11):
        series += BERNOULLI[j - 1] * ratio * power
        power *= inverse2
        ratio *= (2.0 * j + n) * (2.0 * j + n + 1.0) / ((2.0 * j + 1.0) * (2.0 * j + 2.0))
    total = series + 0.5 * z ** -(k + 1) + z ** -k / n
    for j in range(m - 1, -1, -1):
        t = abs(x + j)
        scale = (k + 1) * math.log(t)
        if scale < -709.0:  # the term overflows (Python's ** would raise)
            return sign * INF
        if scale < 709.0:  # else it underflows to nothing
            total += (1.0 if x + j > 0.0 or k % 2 == 1 else -1.0) * t ** -(k + 1)
    return sign * factorial * total


def beta(a, b):
    """B(a, b) = gamma(a) gamma(b) / gamma(a + b); SciPy's edges: inf at a pole of a or b,
    0 where a + b is one, or where a or b is inf (and the other finite and positive)."""
    if a != a or b != b:
        return NAN
    pole_a, pole_b, pole_ab = _is_pole(a), _is_pole(b), _is_pole(a + b)
    if pole_a or pole_b:
        return INF
    if pole_ab:
        return 0.0
    if a == INF or b == INF:
        return 0.0 if (a > 0.0 and b > 0.0) else NAN
    if a > 0.0 and b > 0.0 and min(a, b) < 1e-17:  # 1/a - psi(b) - euler + O(a)
        small, other = min(a, b), max(a, b)
        return 1.0 / small + (1.0 / other if other < 1e-17 else -(digamma(other) + EULER))
    if a + b < GAMMA_OVERFLOW and a > 0.0 and b > 0.0:
        return _beta_positive(a, b)
    if a > 0.0 and b > 0.0:
        log_beta = _lbeta_sum(a, b)
        return math.exp(log_beta) if log_beta < 709.0 else INF
    return _divide(gamma(a) * gamma(b), gamma(a + b))


def _divide(p, q):
    # p / q with NumPy's rules at q = 0 (Python's `/` raises there)
    if q == 0.0:
        return NAN if p == 0.0 or p != p else math.copysign(INF, p) * math.copysign(1.0, q)
    return p / q


def _beta_positive(a, b):
    hi, lo, scale = _beta_dd(a, b)
    return (hi + lo) * scale


def _beta_dd(a, b):
    # gamma(a) gamma(b) / gamma(a + b) in double-double, as (hi, lo, power-of-two scale),
    # corrected for the rounding of c = a + b: gamma(c) moves by psi(c) times it, hundreds of
    # ulps at c ~ 100 (a, b > 0, c < GAMMA_OVERFLOW)
    if a < b:
        a, b = b, a
    c = a + b
    ah, al, a_scale = gamma_dd(a)
    bh, bl, b_scale = gamma_dd(b)
    ch, cl, c_scale = gamma_dd(c)
    hi, lo = dd_div(ah, al, ch, cl)
    hi, lo = dd_mul(hi, lo, bh, bl)
    hi, lo = dd_add(hi, lo, -hi * digamma(c) * _sum_error(a, b, c), 0.0)
    return hi, lo, (a_scale / c_scale) * b_scale  # a_scale <= c_scale: no overflow


def _lbeta_sum(a, b):
    c = a + b
    return lgamma(a) + lgamma(b) - (lgamma(c) + digamma(c) * _sum_error(a, b, c))


def lbeta(a, b):
    """log|B(a, b)|; SciPy's edges: inf at a pole of a or b, -inf where a or b is inf."""
    if a != a or b != b:
        return NAN
    if _is_pole(a) or _is_pole(b):
        return INF
    if a == INF or b == INF:
        return -INF if (a > 0.0 and b > 0.0) else NAN
    if a > 0.0 and b > 0.0 and a + b < GAMMA_OVERFLOW and min(a, b) >= 1e-17:
        hi, lo, scale = _beta_dd(a, b)
        if scale == 1.0 and hi > 1e-300:  # log in double-double: accurate where lbeta ~ 0
            return dd_log(hi, lo)
    return _lbeta_sum(a, b)


def _sum_error(a, b, c):
    """(a + b) - c exactly, for c = fl(a + b) (Knuth's TwoSum): a + b's rounding moves
    gamma(a + b) by psi(a + b) times it, hundreds of ulps at a + b ~ 100."""
    b_virtual = c - a
    return (a - (c - b_virtual)) + (b - b_virtual)


def xlogy(x, y):
    """x * log(y), 0 where x is 0 (unless y is nan), as SciPy's."""
    if x == 0.0 and y == y:
        return 0.0
    if y != y or x != x or y < 0.0:
        return NAN
    if y == 0.0:
        return -INF if x > 0.0 else INF
    return x * math.log(y)


def _vectorised(function):
    return np.vectorize(function, otypes=[float])


gamma_np = _vectorised(gamma)
lgamma_np = _vectorised(lgamma)
digamma_np = _vectorised(digamma)
polygamma_np = _vectorised(polygamma)
beta_np = _vectorised(beta)
lbeta_np = _vectorised(lbeta)
erfinv_np = _vectorised(erfinv)
erfcinv_np = _vectorised(erfcinv)
besselj_np = _vectorised(besselj)
bessely_np = _vectorised(bessely)
xlogy_np = _vectorised(xlogy)

SCALAR = {"gamma": gamma, "lgamma": lgamma, "digamma": digamma, "polygamma": polygamma,
          "beta": beta, "lbeta": lbeta, "erfinv": erfinv, "erfcinv": erfcinv,
          "besselj": besselj, "bessely": bessely, "xlogy": xlogy}
