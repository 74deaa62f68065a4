"""Special functions as plain Python on floats: gamma, lgamma, digamma, polygamma, beta, lbeta,
erfinv, erfcinv, besselj, bessely (integer order) and xlogy, with SciPy's values at poles and
edges (``scipy.special``), each also NumPy-vectorised (``*_np``) for the Python batch path.

The scalar functions use only ``math``, float arithmetic and loops, so
`symgraph.backends.numba.special` compiles the very same functions with ``@njit``: every
backend computes the same numbers. Methods (errors measured against mpmath, tests/test_special.py
and docs/functions.md):

* gamma (x > 0), lgamma (0 < x < 90), beta, lbeta: in double-double (`.special_gamma`): the
  recurrence to [1, 2) and a Taylor series about 1.5; lgamma = log(gamma) there (relative
  accuracy at its zeros 1 and 2); beta the gamma ratio corrected for the rounding of a + b.
  Elsewhere ``math.gamma`` / ``math.lgamma``, poles and overflow as SciPy.
* digamma: Taylor series about 1, about its positive root and about 2 (coefficients from
  mpmath), the recurrence down to them below 10, the asymptotic series above.
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
    lgamma_near_zeros,
    polygamma_positive,
)

INF, NAN = math.inf, math.nan
EULER = 0.5772156649015329
ROOT_HI, ROOT_LO = 1.4616321449683622, 9.549995429965697e-17  # digamma's positive root
GAMMA_OVERFLOW = 171.624376956302  # gamma(x) is inf above
LGAMMA_DD = 90.0  # lgamma below is log(gamma) in double-double (gamma below 2**500: no scale)

# Taylor coefficients of digamma, highest order first (Horner): about 1, its root, 2.
_AT_1 = (
    -1.0000000004656628, 1.0000000009313275, -1.0000000018626598, 1.000000003725334,
    -1.0000000074507118, 1.0000000149015549, -1.0000000298035034, 1.000000059608189,
    -1.000000119219926, 1.0000002384505027, -1.0000004769329869, 1.0000009539620338,
    -1.0000019082127165, 1.000003817293265, -1.0000076371976379, 1.0000152822594086,
    -1.000030588236307, 1.0000612481350588, -1.0001227133475785, 1.000246086553308,
    -1.0004941886041194, 1.000994575127818, -1.0020083928260821, 1.0040773561979444,
    -1.008349277381923, 1.0173430619844492, -1.03692775514337, 1.0823232337111381,
    -1.2020569031595942, 1.6449340668482264, -0.5772156649015329)
_AT_ROOT = (
    -7.569179582195066e-05, 0.0001106337276874741, -0.00016170622091974803,
    0.00023635601564027053, -0.0003454680251063077, 0.000504953265834602,
    -0.0007380709389960052, 0.0010788252019162967, -0.0015769367714301972,
    0.002305126326734928, -0.003369801655439328, 0.004926781395729853, -0.007204534386356869,
    0.010538791616612175, -0.01542476590494896, 0.022597648232218104, -0.03316112647484736,
    0.04880428816414311, -0.07219956125645471, 0.10782405069126237, -0.16394270544240652,
    0.258499760955651, -0.4427631689835921, 0.9676722454476212)
_AT_2 = (
    -4.769329867878064e-07, 9.539620338727962e-07, -1.908212716553939e-06,
    3.81729326499984e-06, -7.637197637899763e-06, 1.528225940865187e-05,
    -3.058823630702049e-05, 6.124813505870483e-05, -0.00012271334757848915,
    0.0002460865533080483, -0.0004941886041194645, 0.0009945751278180853,
    -0.0020083928260822143, 0.00407735619794434, -0.008349277381922827, 0.01734306198444914,
    -0.03692775514336993, 0.08232323371113819, -0.2020569031595943, 0.6449340668482264,
    0.42278433509846713)

def _horner(coefficients, h):
    total = 0.0
    for c in coefficients:
        total = total * h + c
    return total


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
    if 0.75 <= x < 1.25 or 1.5 <= x < 2.5:
        return lgamma_near_zeros(x)
    if 0.0 < x < LGAMMA_DD:  # log of gamma in double-double: relative accuracy near 1 and 2
        hi, lo, _ = gamma_dd(x)
        return dd_log(hi, lo)
    return math.lgamma(x)


def _digamma_positive_core(z):
    # z in [1.25, 2.25): no further recursion (Numba compiles no recursive cycle here)
    if z < 1.75:
        h = (z - ROOT_HI) - ROOT_LO
        return _horner(_AT_ROOT, h) * h
    return _horner(_AT_2, z - 2.0)


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
        return _digamma_reflected(1.0 - x) - math.pi / math.tan(math.pi * fraction)
    if x < 0.75:  # no cancellation: psi(x + 1) < 0.21 and 1/x > 1.33
        return _digamma_reflected(x + 1.0) - 1.0 / x
    return _digamma_reflected(x)


def _digamma_reflected(x):
    # x >= 0.75 (digamma's callers shift below it): the cases without recursion
    if x >= 10.0:
        inverse2 = 1.0 / (x * x)
        series = 0.0
        power = inverse2
        for k in range(1, 10):
            series += BERNOULLI[k - 1] / (2.0 * k) * power
            power *= inverse2
        return math.log(x) - 0.5 / x - series
    if x < 1.25:
        return _horner(_AT_1, x - 1.0)
    if x < 2.25:
        return _digamma_positive_core(x)
    z = x
    m = 0
    while z >= 2.25:
        z -= 1.0
        m += 1
    total = 0.0
    for j in range(m, 0, -1):
        total += 1.0 / (z + (j - 1))
    return _digamma_positive_core(z) + total


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
