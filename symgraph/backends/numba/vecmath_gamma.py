"""Vectorisable lgamma and digamma for normal x in (0, GAMMA_LIMIT]: vecmath's rules (straight-
line code of float arithmetic, fused multiply-adds and selects, no calls, loops or branches;
IEEE semantics), reached through `symgraph.backends.numba.vecmath`, which names them
(vecmath.vlgamma...) and imports this module on first use.

The algorithm and its tables are `symgraph.ir.special_lgamma`'s (the scalar lgamma's): one
step of the recurrence below 3 to t in [1, 2), where lgamma = (t - 1)(t - 2) R(t) and
psi = (t - x0) Q(t) (exact factors: relative accuracy at lgamma's zeros 1 and 2 and psi's root
x0), the asymptotic series from 3 on, the step and the sums in double-double. Here every lane
does all of it, selecting its pieces (`_reduce`): one log (`vecmath_log._log_dd`, of the same
argument in both functions, so LLVM computes it once for a kernel calling both on one value),
one polynomial of [1, 2), one of 1/x^2, one division. Negative x (the reflection formula, a
sine of pi x: more than the whole function), subnormals, inf, nan and x beyond GAMMA_LIMIT are
for callers to fix up with `symgraph.ir.special`'s scalar functions, where `vgammaoff` is
true.

Each function is its two pieces (``_lgamma_near``/``_lgamma_far``...) and a select, so two more
forms give its bits: `vlgamma_digamma`, both of one value (a point kernel's pack of a value
and its derivative: one reduction, log and reciprocal), and the branching scalar forms
(`lgamma_branching`, `digamma_branching`: only the piece a value needs, for row kernels'
calls; 2026-12-07, Zen 4: ~23 and ~17-23 ns a call against ~35 and ~27 for the selects).
"""

from __future__ import annotations

from ...ir.special_lgamma import DIGAMMA_Q as Q
from ...ir.special_lgamma import DIGAMMA_Q0_LO as Q0_LO
from ...ir.special_lgamma import DIGAMMA_V as V
from ...ir.special_lgamma import HALF_LOG_2PI_LO, ROOT_HI, ROOT_LO, STIRLING_C_HI, TRIGAMMA_CUBIC
from ...ir.special_lgamma import LGAMMA_R as R
from ...ir.special_lgamma import LGAMMA_R0_LO as R0_LO
from ...ir.special_lgamma import STIRLING_W as W
from .deferred import jit as _jit
from .runtime.bits import _fma, _mul_error, _where
from .vecmath_log import _log_dd

GAMMA_LIMIT = 1.0e305  # beyond, lgamma is near overflow (from 2.56e305): the scalar's care


@_jit(error_model="numpy", forceinline=True)
def _cubic(e, e2, c0, c1, c2, c3):
    """c0 + c1 e + c2 e^2 + c3 e^3 by Estrin's scheme (e2 = e * e): two independent fused
    multiply-adds, then one."""
    return _fma(_fma(c3, e, c2), e2, _fma(c1, e, c0))


@_jit(error_model="numpy", forceinline=True)
def _leading(e, tail, c1, c0, c0_lo):
    """c0 + e (c1 + e tail) = hi + lo, for |e| <= 1/2 and |e tail| < |c1|, |e c1| < |c0|: the
    two leading Horner steps in double-double (exact products), c0 + c0_lo the constant term."""
    p = e * tail
    c = c1 + p
    c_lo = ((c1 - c) + p) + _mul_error(e, tail, p)
    m = e * c
    m_lo = _mul_error(e, c, m) + e * c_lo
    hi = c0 + m
    return hi, ((c0 - hi) + m) + (m_lo + c0_lo)


@_jit(error_model="numpy", forceinline=True)
def _reduce(x):
    """(t, t_lo, sign, arg): t in [1, 2) (1.5 from x = 3 on: unused), x + 1 = t + t_lo exactly
    below 1; the step's sign (-1 below 1, 0 in [1, 2), +1 above) and its argument: x below 1,
    t in [2, 3), x from 3 on (the asymptotic series' log and 1/x), 1 in [1, 2)."""
    small = x < 1.0
    t = _where(small, x + 1.0, _where(x < 2.0, x, _where(x < 3.0, x - 1.0, 1.5)))
    t_lo = _where(small, x - (t - 1.0), 0.0)  # t - 1 exact (Sterbenz): the rounding of x + 1
    sign = _where(small, -1.0, _where(x < 2.0, 0.0, 1.0))
    arg = _where(small, x, _where(x < 2.0, 1.0, _where(x < 3.0, t, x)))
    return t, t_lo, sign, arg


@_jit(error_model="numpy", forceinline=True)
def _lgamma_core(t):
    """lgamma(t) = hi + lo for t in [1, 2]: (t - 1)(t - 2) R(t), the two factors exact, R's
    two leading terms in double-double; and (2t - 3) R(t), lgamma'(t) to within 0.04."""
    e = t - 1.5
    e2 = e * e
    e4 = e2 * e2
    r0 = _cubic(e, e2, R[2], R[3], R[4], R[5])
    r1 = _cubic(e, e2, R[6], R[7], R[8], R[9])
    r2 = _cubic(e, e2, R[10], R[11], R[12], R[13])
    r3 = _cubic(e, e2, R[14], R[15], R[16], R[17])
    r4 = _cubic(e, e2, R[18], R[19], R[20], R[21])
    tail = _fma(_fma(_fma(_fma(r4, e4, r3), e4, r2), e4, r1), e4, r0)
    r, r_lo = _leading(e, tail, R[1], R[0], R0_LO)
    a = t - 1.0
    b = t - 2.0
    ab = a * b
    ab_lo = _mul_error(a, b, ab)
    hi = ab * r
    lo = _mul_error(ab, r, hi) + (ab * r_lo + ab_lo * r)
    return hi, lo, (a + b) * r


@_jit(error_model="numpy", forceinline=True)
def _digamma_core(t):
    """psi(t) = hi + lo for t in [1, 2]: (t - x0) Q(t) with x0 = psi's root as a double-double
    (t - its head exact), Q's two leading terms in double-double; and psi'(t) to 0.0015 (a
    cubic) for t in [1, 1.5]."""
    e = t - 1.5
    e2 = e * e
    e4 = e2 * e2
    q0 = _cubic(e, e2, Q[2], Q[3], Q[4], Q[5])
    q1 = _cubic(e, e2, Q[6], Q[7], Q[8], Q[9])
    q2 = _cubic(e, e2, Q[10], Q[11], Q[12], Q[13])
    q3 = _cubic(e, e2, Q[14], Q[15], Q[16], Q[17])
    q4 = _cubic(e, e2, Q[18], Q[19], Q[20], Q[21])
    q5 = _fma(Q[23], e, Q[22])
    tail = _fma(_fma(_fma(_fma(_fma(q5, e4, q4), e4, q3), e4, q2), e4, q1), e4, q0)
    q, q_lo = _leading(e, tail, Q[1], Q[0], Q0_LO)
    d = t - ROOT_HI
    hi = d * q
    lo = _mul_error(d, q, hi) + (d * q_lo - ROOT_LO * q)
    h = t - 1.0
    slope = _fma(_fma(_fma(TRIGAMMA_CUBIC[3], h, TRIGAMMA_CUBIC[2]), h, TRIGAMMA_CUBIC[1]), h,
                 TRIGAMMA_CUBIC[0])
    return hi, lo, slope


@_jit(error_model="numpy", forceinline=True)
def _two_sum(a, b):
    """a + b = s + err exactly (Knuth's TwoSum: no condition on the magnitudes)."""
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


@_jit(error_model="numpy", forceinline=True)
def _lgamma_near(t, t_lo, sign, lh, ll):
    """lgamma(x) for x below 3, from `_reduce`'s (t, t_lo, sign) and the double-double log
    (lh, ll) of its arg: `_lgamma_core` of t plus the step's log."""
    g, g_lo, slope = _lgamma_core(t)
    s, s_err = _two_sum(g, sign * lh)  # the step: + log(x - 1), - log x (sign * lh exact)
    return s + (s_err + (g_lo + (sign * ll + slope * t_lo)))


@_jit(error_model="numpy", forceinline=True)
def _lgamma_far(x, u, lh, ll):
    """lgamma(x) from 3 on, u = 1/x, (lh, ll) the double-double log x: Stirling's
    (x - 1/2)(log x - 1) + (log(2 pi) - 1)/2 + W(1/x^2)/x, its product exact."""
    l1, l1_lo = _two_sum(lh, -1.0)  # log x - 1
    a = x - 0.5
    a_lo = (x - a) - 0.5  # 0 below 2**52
    p = a * l1  # (x - 1/2)(log x - 1): never above lgamma itself
    p_lo = _mul_error(a, l1, p) + (a * (l1_lo + ll) + a_lo * l1)
    f, f_err = _two_sum(p, STIRLING_C_HI)
    z = u * u
    z2 = z * z
    z4 = z2 * z2
    w0 = _cubic(z, z2, W[0], W[1], W[2], W[3])
    w1 = _cubic(z, z2, W[4], W[5], W[6], W[7])
    w2 = _cubic(z, z2, W[8], W[9], W[10], W[11])
    w = u * _fma(_fma(_fma(W[12], z4, w2), z4, w1), z4, w0)
    return f + (f_err + (p_lo + (HALF_LOG_2PI_LO + w)))


@_jit(error_model="numpy", forceinline=True)
def vlgamma(x: float) -> float:
    """log(gamma(x)) for normal x in (0, GAMMA_LIMIT] (elsewhere unspecified: callers fix up
    where `vgammaoff` is true). Below 3 `_lgamma_core` of t plus the step's log; from 3 on
    Stirling's (x - 1/2)(log x - 1) + (log(2 pi) - 1)/2 + W(1/x^2)/x, the log a double-double
    and its product exact. Max error 0.68 ulp (907,000 points vs mpmath, near x = 1)."""
    t, t_lo, sign, arg = _reduce(x)  # x from 3 on: one log (and 1/x) for both pieces
    lh, ll = _log_dd(arg)
    return _where(x < 3.0, _lgamma_near(t, t_lo, sign, lh, ll),
                  _lgamma_far(x, 1.0 / arg, lh, ll))


@_jit(error_model="numpy", forceinline=True)
def _digamma_near(t, t_lo, sign, r, r_lo):
    """psi(x) for x below 3, from `_reduce`'s (t, t_lo, sign) and r + r_lo = 1 / its arg:
    `_digamma_core` of t plus the step's reciprocal (a double-double)."""
    g, g_lo, slope = _digamma_core(t)
    s, s_err = _two_sum(g, sign * r)
    return s + (s_err + (g_lo + (sign * r_lo + slope * t_lo)))


@_jit(error_model="numpy", forceinline=True)
def _digamma_far(r, r_lo, lh, ll):
    """psi(x) from 3 on, r + r_lo = 1 / x, (lh, ll) the double-double log x: log x - 1/(2x)
    - V(1/x^2)/x^2."""
    h = 0.5 * r
    f = lh - h  # lh >= h
    f_err = (lh - f) - h
    z = r * r
    z2 = z * z
    z4 = z2 * z2
    v0 = _cubic(z, z2, V[0], V[1], V[2], V[3])
    v1 = _cubic(z, z2, V[4], V[5], V[6], V[7])
    v2 = _cubic(z, z2, V[8], V[9], V[10], V[11])
    v3 = _fma(V[13], z, V[12])
    v = _fma(_fma(_fma(v3, z4, v2), z4, v1), z4, v0)
    return f + (f_err + (ll - (0.5 * r_lo + z * v)))


@_jit(error_model="numpy", forceinline=True)
def vdigamma(x: float) -> float:
    """psi(x) = gamma'(x) / gamma(x) for normal x in (0, GAMMA_LIMIT] (elsewhere unspecified:
    callers fix up where `vgammaoff` is true). Below 3 `_digamma_core` of t plus the step's
    reciprocal (a double-double); from 3 on log x - 1/(2x) - V(1/x^2)/x^2. Max error 0.84 ulp
    (907,000 points vs mpmath, near x = 1)."""
    t, t_lo, sign, arg = _reduce(x)  # x from 3 on: vlgamma's own log and 1/x
    r = 1.0 / arg
    r_lo = r * _fma(-arg, r, 1.0)  # 1 / arg = r + r_lo
    lh, ll = _log_dd(arg)
    return _where(x < 3.0, _digamma_near(t, t_lo, sign, r, r_lo),
                  _digamma_far(r, r_lo, lh, ll))


@_jit(error_model="numpy", forceinline=True)
def vlgamma_digamma(x: float) -> tuple[float, float]:
    """(lgamma(x), psi(x)), equal bit for bit to (vlgamma(x), vdigamma(x)): inlined side by
    side, LLVM computes their argument reduction, log and 1/x once (a value and its
    derivative: reverse mode pairs lgamma(u) with digamma(u); packs.PAIRS)."""
    return vlgamma(x), vdigamma(x)


@_jit(error_model="numpy", forceinline=True)
def lgamma_branching(x: float) -> float:
    """vlgamma(x)'s bits for one value at a time, computing only the piece x needs (a branch:
    about half vlgamma's work) for row kernels' scalar calls (backends.numba.special)."""
    if x < 3.0:
        t, t_lo, sign, arg = _reduce(x)
        lh, ll = _log_dd(arg)
        return _lgamma_near(t, t_lo, sign, lh, ll)
    lh, ll = _log_dd(x)
    return _lgamma_far(x, 1.0 / x, lh, ll)


@_jit(error_model="numpy", forceinline=True)
def digamma_branching(x: float) -> float:
    """vdigamma(x)'s bits for one value at a time, computing only the piece x needs."""
    t, t_lo, sign, arg = _reduce(x)
    r = 1.0 / arg
    r_lo = r * _fma(-arg, r, 1.0)
    if x < 3.0:
        return _digamma_near(t, t_lo, sign, r, r_lo)
    lh, ll = _log_dd(x)
    return _digamma_far(r, r_lo, lh, ll)


@_jit(error_model="numpy", forceinline=True)
def vgammaoff(x: float) -> bool:
    """Whether vlgamma(x) and vdigamma(x) are outside their range (x not normal and positive,
    nan, beyond GAMMA_LIMIT): a lane's flag for its fix-up with the scalar function (SciPy's
    values at poles, subnormals and infinities, the reflection below 0)."""
    return x < 2.2250738585072014e-308 or x != x or x > GAMMA_LIMIT
