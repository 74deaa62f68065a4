"""lgamma of a positive x, and the tables it shares with the vector lgamma and digamma
(`symgraph.backends.numba.vecmath_gamma`): one algorithm for both, so the row and lane kernels
give the same numbers (within an ulp; each within 0.7 ulp of the truth).

For x in (0, 3) one step of the recurrence moves x to t in [1, 2) (x < 1: t = x + 1, less
log x; 2 <= x < 3: t = x - 1, plus log t), where lgamma(t) = (t - 1)(t - 2) R(t): both factors
exact, so lgamma is accurate relative to itself at its zeros 1 and 2. From 3 on, Stirling's
(x - 1/2)(log x - 1) + (log(2 pi) - 1)/2 + W(1/x^2)/x (no intermediate above lgamma itself).
The step's log and the sums are double-doubles.
digamma's tables (psi = (t - x0) Q(t) on [1, 2), log x - 1/(2x) - V(1/x^2)/x^2 from 3 on) are
here for the vector function; the scalar digamma (`symgraph.ir.special`) is its Taylor series.

Coefficients are Chebyshev fits (``mpmath.chebyfit`` at 80 digits, rounded to float64), lowest
order first: R (degree 21) and Q (23) in e = t - 1.5 over [-1/2, 1/2], fit errors 8e-19 and
6e-19; W(z) = (lgamma(x) - (x - 1/2) log x + x - log(2 pi)/2) x (12) and
V(z) = (log x - 1/(2x) - psi(x)) x^2 (13) in z = 1/x^2 over [0, 1/9], 6e-19 and 2e-18. The
rounding of R's and Q's constant terms is kept (`*_LO`). Plain Python on floats (Dekker's
products): Numba compiles it as it is (`symgraph.backends.numba.special`).
"""

from __future__ import annotations

import math

from .special_gamma import two_prod, two_sum

LGAMMA_R = (
    0.4831289505409809, -0.14595989591430608, 0.06291140107456439, -0.031308487501010646,
    0.01679709863127416, -0.009425622448525798, 0.005446457839126065, -0.0032120740737152814,
    0.0019229163127905161, -0.0011644145847310124, 0.000711519067515296, -0.00043799307479613914,
    0.00027131373861446925, -0.0001689178215524898, 0.00010535512483785591,
    -6.614136022346414e-05, 4.30276814976503e-05, -2.7201673025504752e-05, 1.3186019073996835e-05,
    -8.355075869795273e-06, 1.2140008083973407e-05, -7.760660152513446e-06,
)
DIGAMMA_Q = (
    0.9510558760318328, -0.42362742128146047, 0.24054248424078736, -0.14840492305391761,
    0.09498872445283, -0.06192213327165706, 0.04076083394462657, -0.02697579684427536,
    0.017907248195969127, -0.011908215172584002, 0.007927024067961237, -0.00528001782089874,
    0.0035180800751066694, -0.002344650082351321, 0.0015635679757533885, -0.001042261556504223,
    0.0006899717801166841, -0.0004599625144612576, 0.0003268068044141764, -0.0002178682145501451,
    9.173383289174792e-05, -6.11554261750751e-05, 0.00012230983055406747, -8.153978973309418e-05,
)
STIRLING_W = (
    0.08333333333333333, -0.0027777777777757695, 0.000793650792622404, -0.0005952378854503139,
    0.0008417282394032359, -0.0019160464198791072, 0.006346110578292672, -0.027601910018978465,
    0.13605466944124706, -0.6346190865706115, 2.348297111372058, -5.724231505133728,
    6.653396422514748,
)
DIGAMMA_V = (
    0.08333333333333333, -0.008333333333325033, 0.003968253963318731, -0.004166665495022904,
    0.0075756100694986265, -0.021081441106059102, 0.08275092617561204, -0.42213739276734025,
    2.4853225179572207, -14.509465068315617, 72.40846099395732, -269.9594777475153,
    643.1483984648313, -720.4954060785403,
)
LGAMMA_R0_LO = 1.728379480196658e-17  # LGAMMA_R[0]'s rounding
DIGAMMA_Q0_LO = 4.292118102788199e-17  # DIGAMMA_Q[0]'s rounding
# psi'(t) on [1, 1.5] as a cubic in t - 1, to 0.0015 (for the rounding of x + 1 below 0.5).
TRIGAMMA_CUBIC = (1.6434790017325671, -2.339856929555989, 2.5857747741577524,
                  -1.4905004293114799)
ROOT_HI, ROOT_LO = 1.4616321449683622, 9.549995429965697e-17  # psi's positive root
HALF_LOG_2PI_HI, HALF_LOG_2PI_LO = 0.9189385332046728, -3.8782941580672414e-17
# Stirling's constant as it is summed: (x - 1/2)(log x - 1) + (log(2 pi) - 1)/2 + ... (exact)
STIRLING_C_HI = HALF_LOG_2PI_HI - 0.5
STIRLING_FROM = 3.0  # the asymptotic series from here on
_LN2_HI, _LN2_LO = 0.6931471805598903, 5.497923018708371e-14  # k * _LN2_HI exact, |k| < 2**11
# 2 / (2j + 1), j = 12..1: log m = 2s + s z sum_j (2 / (2j + 1)) z**(j-1) (z = s**2 <= 0.0295:
# z**12 < 1e-18)
_ATANH_SERIES = tuple(2.0 / (2 * j + 1) for j in range(12, 0, -1))
_UP, _DOWN = 2.0 ** 100, 2.0 ** -100  # keeps Dekker's split in range for x up to 2.6e305


def _log_dd(x):
    """log(x) = hi + lo for a normal x > 0, to ~1e-19 relative: x = 2**k m with m in
    [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1)/(m + 1) a double-double, and atanh's
    series."""
    m, k = math.frexp(x)
    if m < 0.7071067811865476:
        m, k = 2.0 * m, k - 1
    f = m - 1.0  # exact
    d = 2.0 + f
    d_lo = (2.0 - d) + f
    s = f / d
    p, p_err = two_prod(s, d)
    s_lo = (((f - p) - p_err) - s * d_lo) / d  # f / (d + d_lo) = s + s_lo
    z = s * s
    series = 0.0
    for c in _ATANH_SERIES:
        series = series * z + c
    a = k * _LN2_HI
    hi, err = two_sum(a, 2.0 * s)
    lo = err + ((s * z * series + 2.0 * s_lo) + k * _LN2_LO)
    y = hi + lo
    return y, (hi - y) + lo


def _leading_terms(table, low, e):
    """table's polynomial at e as hi + lo: the orders from 2 by Horner in doubles, the two
    leading steps in double-double (exact products), table[0] + low the constant term."""
    tail = _series(table[2:], e)
    p, p_err = two_prod(e, tail)
    c, c_err = two_sum(table[1], p)
    m, m_err = two_prod(e, c)
    m_err += e * (c_err + p_err)
    hi, err = two_sum(table[0], m)
    return hi, err + (m_err + low)


def _reduce(x):
    """(t, t_lo, sign, arg) for 0 < x < 3: the one step of the recurrence to t in [1, 2)
    (below 1: x + 1 = t + t_lo exactly, the step's sign -1 and its argument x; from 2: t =
    x - 1, sign +1, argument t; in [1, 2): no step, sign 0)."""
    if x < 1.0:
        t = x + 1.0
        return t, x - (t - 1.0), -1.0, x
    if x < 2.0:
        return x, 0.0, 0.0, 1.0
    return x - 1.0, 0.0, 1.0, x - 1.0


def _series(table, z):
    """sum table[i] z**i (Horner)."""
    total = 0.0
    for i in range(len(table) - 1, -1, -1):
        total = total * z + table[i]
    return total


def lgamma_positive(x):
    """log(gamma(x)) for a normal x in (0, 2.55e305]: see the module docstring."""
    if x >= STIRLING_FROM:
        lh, ll = _log_dd(x)
        l1, l1_lo = two_sum(lh, -1.0)
        a = x - 0.5
        a_lo = (x - a) - 0.5  # 0 below 2**52
        p, p_err = two_prod(a * _DOWN, l1)  # (x - 1/2)(log x - 1), never above lgamma itself
        p_err = p_err * _UP + (a * (l1_lo + ll) + a_lo * l1)
        f, f_err = two_sum(p * _UP, STIRLING_C_HI)
        u = 1.0 / x
        z = u * u
        w = _series(STIRLING_W, z)
        return f + (f_err + (p_err + (HALF_LOG_2PI_LO + u * w)))
    t, t_lo, sign, arg = _reduce(x)
    r, r_lo = _leading_terms(LGAMMA_R, LGAMMA_R0_LO, t - 1.5)
    a, b = t - 1.0, t - 2.0
    ab, ab_lo = two_prod(a, b)
    g, g_lo = two_prod(ab, r)
    g_lo += ab * r_lo + ab_lo * r
    lh, ll = _log_dd(arg)
    s, s_err = two_sum(g, sign * lh)
    return s + (s_err + (g_lo + (sign * ll + (a + b) * r * t_lo)))


def _reciprocal(a):
    """1/a = r + r_lo for a normal a: the residual 1 - a r exactly, by Dekker's product of
    a's and r's mantissas (a = m 2**k: m r 2**k = a r, in the split's range for every a)."""
    r = 1.0 / a
    m, k = math.frexp(a)
    p, p_err = two_prod(m, math.ldexp(r, k))
    return r, r * ((1.0 - p) - p_err)  # 1 - p exact: p is within an ulp of 1


def digamma_positive(x):
    """psi(x) for a normal x > 0, the vector digamma's algorithm: one step of the recurrence
    below 3 (psi(x) = psi(x + 1) - 1/x, psi(x - 1) + 1/(x - 1)) to t in [1, 2), where
    psi(t) = (t - x0) Q(t) (relative accuracy at the root x0); from 3 on
    log x - 1/(2x) - V(1/x^2)/x^2; the step and the sums in double-double."""
    if x >= STIRLING_FROM:
        lh, ll = _log_dd(x)
        r, r_lo = _reciprocal(x)
        h = 0.5 * r
        f = lh - h  # lh >= h
        z = r * r
        v = _series(DIGAMMA_V, z)
        return f + (((lh - f) - h) + (ll - (0.5 * r_lo + z * v)))
    t, t_lo, sign, arg = _reduce(x)
    q, q_lo = _leading_terms(DIGAMMA_Q, DIGAMMA_Q0_LO, t - 1.5)
    d = t - ROOT_HI  # exact
    g, g_lo = two_prod(d, q)
    g_lo += d * q_lo - ROOT_LO * q
    r, r_lo = _reciprocal(arg)
    s, s_err = two_sum(g, sign * r)
    h = t - 1.0
    slope = ((TRIGAMMA_CUBIC[3] * h + TRIGAMMA_CUBIC[2]) * h + TRIGAMMA_CUBIC[1]) * h \
        + TRIGAMMA_CUBIC[0]
    return s + (s_err + (g_lo + (sign * r_lo + slope * t_lo)))
