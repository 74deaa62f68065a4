"""vecmath's sine, cosine and tangent (`vsin`, `vcos`, `vsincos`, `vtan`, and the array loops
`vsin_array`, `vcos_array`): one argument reduction by pi/2 to a double-double r and
polynomials of r, exact-reduced up to SIN_COS_LIMIT (callers recompute beyond it with libm).
A module of its own, as `vecmath_log`; vecmath imports every name (the rules are vecmath's,
see its docstring)."""

from __future__ import annotations

import math

from .deferred import jit as _jit
from .runtime.bits import _bits, _fma, _mul_error, _where
from .vecmath_log import _ROUNDER

SIN_COS_LIMIT = 5.0e7  # vsin/vcos are exact-reduced (<= 1 ulp) for |x| <= this; callers fix up
_2_OVER_PI = 0.6366197723675814
_PIO2_HI = 1.5707963267948966  # pi/2 as three doubles (and 5.6e-50 left)
_PIO2_MID = 6.123233995736766e-17
_PIO2_LO = -1.4973849048591698e-33


@_jit(error_model="numpy", forceinline=True)
def _sin_cos_parts(x):
    """(k, r, sin_tail, w, cos_tail) for |x| <= SIN_COS_LIMIT: x = n pi/2 + r with r as a
    double-double r + r_lo (within ~2**-72 |r|, also at the closest doubles to multiples of
    pi/2), n in the low bits of k; sin r = r + sin_tail and cos r = w + cos_tail, each
    pair before its last rounding (`vtan` divides them as double-doubles)."""
    k = x * _2_OVER_PI + _ROUNDER
    n = k - _ROUNDER
    # x - n pi/2 in three steps of fused multiply-adds: x - n PIO2_HI is exact (a multiple of
    # ulp(PIO2_HI) = 2**-52 below 1 in magnitude, for |x| >= 1; n is 0 or +-1 below), n PIO2_MID
    # is p + p_err exactly, and the difference a - p is b + e exactly (TwoSum), so r + r_lo is
    # within ~2**-72 |r| of x - n pi/2 even at the doubles closest to multiples of pi/2 (|r| >
    # 2**-61 up to the limit; |n| < 2**25). 16 operations where four 28-bit parts took 28.
    a = _fma(-n, _PIO2_HI, x)
    m = n * _PIO2_MID
    m_err = _mul_error(n, _PIO2_MID, m)
    b = a - m
    v = b - a
    e = (a - (b - v)) - (m + v)
    lo = _fma(-n, _PIO2_LO, e - m_err)
    r = b + lo
    r_lo = (b - r) + lo
    z = r * r
    # sin r = r + r^3 S(r^2), S of degree 6 (fit error 2**-66)
    p = -7.586696964319367e-13
    p = _fma(p, z, 1.6058531616384064e-10)
    p = _fma(p, z, -2.505210623243116e-08)
    p = _fma(p, z, 2.755731921933912e-06)
    p = _fma(p, z, -0.00019841269841265065)
    p = _fma(p, z, 0.008333333333333331)
    p = _fma(p, z, -0.16666666666666666)
    sin_tail = r * z * p + (r_lo - 0.5 * z * r_lo)
    # cos r = 1 - r^2/2 + r^4 C(r^2), C of degree 5; r^2 = z + z_err exactly (`_mul_error`)
    z_err = _mul_error(r, r, z)
    q = -1.138263220199036e-11
    q = _fma(q, z, 2.0876146265300598e-09)
    q = _fma(q, z, -2.7557317271714906e-07)
    q = _fma(q, z, 2.480158729876566e-05)
    q = _fma(q, z, -0.0013888888888887398)
    q = _fma(q, z, 0.041666666666666664)
    hz = 0.5 * z
    w = 1.0 - hz
    cos_tail = ((1.0 - w) - hz) + (z * z * q - (r * r_lo + 0.5 * z_err))
    return k, r, sin_tail, w, cos_tail


@_jit(error_model="numpy", forceinline=True)
def _sin_cos_reduced(x):
    """(k, sin r, cos r) for |x| <= SIN_COS_LIMIT, both rounded (`_sin_cos_parts`)."""
    k, r, sin_tail, w, cos_tail = _sin_cos_parts(x)
    return k, r + sin_tail, w + cos_tail


@_jit(error_model="numpy", forceinline=True)
def _in_quadrant(k, shift, sin_r, cos_r):
    """sin(x + shift pi/2) from `_sin_cos_reduced`: the quadrant's polynomial and sign."""
    quadrant = _bits(k) + shift  # the low bits of k are those of n
    y = _where((quadrant & 1) != 0, cos_r, sin_r)
    return _where((quadrant & 2) != 0, -y, y)


@_jit(error_model="numpy", forceinline=True)
def _sin_cos(x, shift):
    """sin(x + shift pi/2) for |x| <= SIN_COS_LIMIT, with a final rounding."""
    k, sin_r, cos_r = _sin_cos_reduced(x)
    return _in_quadrant(k, shift, sin_r, cos_r)


@_jit(error_model="numpy", forceinline=True)
def vsin(x: float) -> float:
    """sin(x) for |x| <= SIN_COS_LIMIT (beyond: unspecified, see `vsin_array`); nan for inf.
    Max error 0.74 ulp (66,000 points vs mpmath, with the doubles nearest to k pi/2)."""
    return _where(x == 0.0, x, _sin_cos(x, 0))  # keeps -0.0


@_jit(error_model="numpy", forceinline=True)
def vcos(x: float) -> float:
    """cos(x) for |x| <= SIN_COS_LIMIT (beyond: unspecified, see `vcos_array`); nan for inf.
    Max error 0.73 ulp (66,000 points vs mpmath, with the doubles nearest to k pi/2)."""
    return _sin_cos(x, 1)


@_jit(error_model="numpy", forceinline=True)
def vsincos(x: float) -> tuple[float, float]:
    """(sin(x), cos(x)), equal bit for bit to (vsin(x), vcos(x)), from one argument reduction:
    for a value and its derivative (reverse mode pairs sin(u) with cos(u))."""
    k, sin_r, cos_r = _sin_cos_reduced(x)
    return _where(x == 0.0, x, _in_quadrant(k, 0, sin_r, cos_r)), _in_quadrant(k, 1, sin_r,
                                                                                cos_r)




@_jit(error_model="numpy")
def vsin_array(x, out):
    """out[:] = sin(x): the vector loop, then lanes beyond SIN_COS_LIMIT again with libm."""
    for j in range(x.size):
        out[j] = vsin(x[j])
    for j in range(x.size):
        if not abs(x[j]) <= SIN_COS_LIMIT:  # never taken in practice; also catches inf, nan
            out[j] = math.sin(x[j])


@_jit(error_model="numpy")
def vcos_array(x, out):
    """out[:] = cos(x): the vector loop, then lanes beyond SIN_COS_LIMIT again with libm."""
    for j in range(x.size):
        out[j] = vcos(x[j])
    for j in range(x.size):
        if not abs(x[j]) <= SIN_COS_LIMIT:
            out[j] = math.cos(x[j])


@_jit(error_model="numpy", forceinline=True)
def vtan(x: float) -> float:
    """tan(x) for |x| <= SIN_COS_LIMIT (beyond: unspecified; callers recompute): sin r / cos r,
    or -cos r / sin r in odd quadrants, divided as double-doubles (`_sin_cos_parts`: the
    quotient's rounding corrected by a fused multiply-add), so that one rounding matters.
    Max error 0.78 ulp (52,000 points vs mpmath, with the doubles nearest to k pi/2)."""
    k, r, sin_tail, w, cos_tail = _sin_cos_parts(x)
    s = r + sin_tail  # sin r = s + s_lo and cos r = c + c_lo (Fast2Sum: |r| >= |sin_tail|,
    s_lo = (r - s) + sin_tail  # w >= |cos_tail|)
    c = w + cos_tail
    c_lo = (w - c) + cos_tail
    odd = (_bits(k) & 1) != 0
    n_hi = _where(odd, c, s)
    n_lo = _where(odd, c_lo, s_lo)
    d_hi = _where(odd, s, c)
    d_lo = _where(odd, s_lo, c_lo)
    inv = 1.0 / d_hi  # one division: q = n_hi inv is within ~1 ulp, and the correction
    q = n_hi * inv  # below, (n - q d) / d by the residual (one fused multiply-add, the
    t = q + ((_fma(-q, d_hi, n_hi) + n_lo) - q * d_lo) * inv  # rounding of n_hi - q d_hi)
    return _where(x == 0.0, x, _where(odd, -t, t))  # keeps -0.0
