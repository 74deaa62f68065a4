"""Vectorisable float64 elementary functions for Numba loops (exp, log, log2, log10, pow, sin, cos,
tan, atan, tanh, atanh, erf, hypot, sinh, cosh, xlogy...). Some live in modules of their own,
imported here by name: the logarithms, atanh and xlogy in `vecmath_log`, the cube root in
`vecmath_root`, sine, cosine and tangent in `vecmath_trig`, lgamma and digamma in
`vecmath_gamma` (on first use).

LLVM cannot vectorise a loop that calls libm, so ``out[j] = math.exp(x[j])`` costs a scalar call
(~15 ns) per point. The functions here are straight-line arithmetic, comparisons and selects
(no calls, loops or branches), so once inlined into a caller's loop LLVM vectorises the loop
(4 doubles per AVX2 instruction, 8 with AVX-512). They are ``forceinline=True`` (LLVM's
alwaysinline): LLVM's own inliner refuses bodies the size of sin/erf, and Numba's IR-level
``inline="always"`` re-types the body at every call site (~0.12 s each for vsin). Selects go
through `_where`: Numba compiles if-expressions to branches, which stop the vectoriser.
They keep IEEE semantics (no fastmath, no FMA contraction: the fused multiply-adds are explicit,
`_fma` for the Horner steps of the polynomials and `_mul_error` for exact product errors, the
value Dekker's split gives; both correctly rounded on every machine, so the bits do not depend
on it) and give NumPy's answers at edge points (nan, inf, signed zeros, overflow, subnormals).

Methods: an argument reduction exact enough for the result (Cody-Waite with split constants,
integer scaling by 2**n through bit casts), then a polynomial whose leading terms are added in
double-double so the final rounding dominates the error. Polynomial coefficients are Chebyshev
fits (``mpmath.chebyfit`` at 200 bits) of each function's reduced kernel, rounded to float64.
Measured max errors against mpmath (at 120 bits) are stated in each docstring.

sin/cos/tan reduce exactly only for ``abs(x) <= SIN_COS_LIMIT``; beyond it their result is
unspecified (finite or nan). Callers recompute such lanes with ``math.sin``/``math.cos`` in a
scalar fix-up loop that practice never enters, as `vsin_array` / `vcos_array` do.

Generated lane code calls these functions by name; the runtime's lowering inlines them from
this file (symgraph.backends.numba.runtime.lowering). The select and bit casts they are built
of (`_where`, `_bits`, `_float`) are single instructions from the runtime adapter. Each
function's Numba dispatcher is made on its first use (`backends.numba.deferred`): a process
that loads every kernel from Numba's cache never makes them (their import: 2-3 -> 0.7-1.2 ms
of CPU, load ~3).
"""

from __future__ import annotations

import math

from .deferred import jit as _jit  # njit, its dispatcher made on first use (cache hits: never)
from .runtime.bits import _bits, _float, _fma, _mul_error, _where  # the adapter's (Numba internals)
from .vecmath_log import _LN2_HI, _LN2_LO, _ROUNDER, _ROUNDER_BITS, _log_dd, _log_kernel
from .vecmath_log import vatanh as vatanh
from .vecmath_log import vlog2 as vlog2  # (public here, like the others)
from .vecmath_log import vlog10 as vlog10
from .vecmath_log import vxlogy as vxlogy
from .vecmath_root import vcbrt as vcbrt  # correctly rounded, cuberoot.cbrt's bits
from .vecmath_trig import SIN_COS_LIMIT as SIN_COS_LIMIT  # sine, cosine, tangent: theirs
from .vecmath_trig import _in_quadrant as _in_quadrant
from .vecmath_trig import _sin_cos_reduced as _sin_cos_reduced
from .vecmath_trig import vcos as vcos
from .vecmath_trig import vcos_array as vcos_array
from .vecmath_trig import vsin as vsin
from .vecmath_trig import vsin_array as vsin_array
from .vecmath_trig import vsincos as vsincos
from .vecmath_trig import vtan as vtan

_LOG2E = 1.4426950408889634


@_jit(error_model="numpy", forceinline=True)
def _exp_reduced(x):
    """x = n ln2 + (r + r_err) with |r| <= ln2/2 (r_err the rounding of r), and g(r) of degree
    10 with exp(r) = 1 + r + r^2 g(r) (by fused multiply-adds); n in the low bits of k (see
    _ROUNDER)."""
    return _exp_reduced_dd(x, 0.0)  # x - 0.0 is x: the same instructions


@_jit(error_model="numpy", forceinline=True)
def _exp_reduced_dd(x, x_lo):
    """`_exp_reduced` of x + x_lo (a double-double, |x_lo| <= ulp(x)): x_lo joins r."""
    k = x * _LOG2E + _ROUNDER
    n = k - _ROUNDER
    hi = x - n * _LN2_HI  # exact (Sterbenz); _fma(-n, _LN2_HI, x), the same bits in one
    # instruction, made yield_curve@7's and gibbs_mixing@25's lane kernels 8% slower
    lo = n * _LN2_LO - x_lo
    r = hi - lo
    r_err = (hi - r) - lo
    r2 = r * r  # the terms of degree >= 2 by Estrin's scheme, then two Horner steps (where the
    r4 = r2 * r2  # rounding matters): a chain of 5 fused multiply-adds, not 10 (the loops are
    e23 = _fma(0.008333333333326141, r, 0.04166666666666667)  # latency-bound: tanh over
    e45 = _fma(0.00019841269874800694, r, 0.0013888888888883752)  # rows, 1.36 -> 1.14 ns)
    e67 = _fma(2.755725542549107e-06, r, 2.480158732553351e-05)
    e89 = _fma(2.5105206480259365e-08, r, 2.755727366116628e-07)
    f25 = _fma(e45, r2, e23)
    f69 = _fma(e89, r2, e67)
    h = _fma(_fma(2.0914679452495193e-09, r4, f69), r4, f25)
    g = _fma(_fma(h, r, 0.1666666666666667), r, 0.5)
    return k, r, r_err, g


@_jit(error_model="numpy", forceinline=True)
def vexp(x: float) -> float:
    """exp(x). x = n ln2 + r, |r| <= ln2/2; exp(r) = 1 + r + r^2 g(r) with g of degree 10 and
    1 + r summed in double-double; times 2**n as two exact powers of two (one rounding, also
    for subnormal results). Max error 0.75 ulp (50,000 points vs mpmath)."""
    x = _where(x > 710.0, 710.0, x)  # beyond: overflow to inf / underflow to 0 happen by scaling
    x = _where(x < -746.0, -746.0, x)
    k, r, r_err, g = _exp_reduced(x)
    s = 1.0 + r
    s_err = (1.0 - s) + r
    p = s + (s_err + (r * r * g + r_err))
    ni = _bits(k) - _ROUNDER_BITS
    n1 = ni >> 1  # 2**n = 2**n1 * 2**n2, both normal for -1076 <= n <= 1024
    n2 = ni - n1
    return p * _float((n1 + 1023) << 52) * _float((n2 + 1023) << 52)


POW_LIMIT = 16.0  # vpow is within 1 ulp for |y log x| <= this (x > 0, both finite); see vpowoff


@_jit(error_model="numpy", forceinline=True)
def vpow(x: float, y: float) -> float:
    """x**y for finite x > 0, |y| <= 1e290 and |y log x| <= POW_LIMIT (elsewhere unspecified:
    callers recompute where `vpowoff` is true, as vsin's do beyond SIN_COS_LIMIT). exp(y log x)
    with log x a double-double (`_log_dd`) and y log x = zh + zl (an exact product), zl
    joining exp's reduced argument. Max error 0.82 ulp (55,000 points vs mpmath)."""
    lh, ll = _log_dd(x)
    zh = y * lh
    zl = _mul_error(y, lh, zh) + y * ll  # y lh = zh + its exact error
    k, r, r_err, g = _exp_reduced_dd(zh, zl)
    s = 1.0 + r
    s_err = (1.0 - s) + r
    p = s + (s_err + (r * r * g + r_err))
    ni = _bits(k) - _ROUNDER_BITS
    return p * _float((ni + 1023) << 52)  # |n| <= 93: a normal power of two


@_jit(error_model="numpy", forceinline=True)
def vpowoff(x: float, y: float) -> bool:
    """Whether vpow(x, y) is outside its range (x <= 0, inf, nan; y nan or |y| > 1e290;
    |y log x| > POW_LIMIT): a lane's flag for its libm fix-up."""
    lh, ll = _log_dd(x)  # vpow's own (one computation once inlined beside it)
    return (x <= 0.0 or x != x or x > 1.7976931348623157e308 or y != y
            or abs(y) > 1.0e290 or abs(y * lh) > POW_LIMIT)


@_jit(error_model="numpy", forceinline=True)
def vpowprev(x: float, y: float, p: float) -> float:
    """x**(y - 1) from p = x**y (the op table's pow_prev) for a normal p: p / x, within ~1.5
    ulp of the power (elsewhere unspecified: callers recompute where `vpowprevoff` is true)."""
    return p / x


@_jit(error_model="numpy", forceinline=True)
def vpowprevoff(p: float) -> bool:
    """Whether p = x**y is no normal float (0, subnormal, inf, nan): vpowprev's lane flag."""
    return abs(p) < 2.2250738585072014e-308 or abs(p) > 1.7976931348623157e308 or p != p


@_jit(error_model="numpy", forceinline=True)
def vhypot(x: float, y: float) -> float:
    """hypot(x, y): both scaled by a power of two when the larger is beyond 2**+-500, then
    x^2 + y^2 as a double-double (exact products, `_mul_error`), its square root and one Newton
    correction in double-double. hypot(inf, nan) is inf, as NumPy's. Max error 0.55 ulp (40,000
    points vs mpmath, subnormal to huge), NumPy's answers at the edges."""
    a = abs(x)
    b = abs(y)
    big = _where(a > b, a, b)
    small = _where(a > b, b, a)
    far = big > 3.273390607896142e150  # 2**500
    near = big < 3.054936363499605e-151  # 2**-500
    sc = _where(far, 2.409919865102884e-181, _where(near, 4.149515568880993e180, 1.0))
    u = big * sc
    v = small * sc
    p = u * u
    p_err = _mul_error(u, u, p)
    q = v * v
    q_err = _mul_error(v, v, q)
    t = p + q
    t_lo = ((p - t) + q) + (p_err + q_err)  # p >= q
    r = math.sqrt(t)
    rr = r * r
    rr_err = _mul_error(r, r, rr)
    r = r + (((t - rr) - rr_err) + t_lo) / (2.0 * r)
    y_ = r * _where(far, 4.149515568880993e180, _where(near, 2.409919865102884e-181, 1.0))
    y_ = _where(big == 0.0, 0.0, y_)
    y_ = _where(a + b != a + b, a + b, y_)  # nan
    y_ = _where(a == math.inf, a, y_)
    return _where(b == math.inf, b, y_)


@_jit(error_model="numpy", forceinline=True)
def _atan_parts(a):
    """atan(a) = head + tail for a >= 0 (fdlibm's scheme, its breakpoints chosen by selects):
    a = t below 7/16, else atan(a) = atan(c) + atan(t) with c = 1/2, 1, 3/2 or infinity and
    t = (a - c)/(1 + c a); atan(t) = t + t P(t^2), degree 11."""
    r1 = a >= 0.4375
    r2 = a >= 0.6875
    r3 = a >= 1.1875
    r4 = a >= 2.4375
    num = _where(r4, -1.0, _where(r3, a - 1.5, _where(r2, a - 1.0, _where(
        r1, 2.0 * a - 1.0, a))))
    den = _where(r4, a, _where(r3, 1.0 + 1.5 * a, _where(r2, a + 1.0, _where(
        r1, 2.0 + a, 1.0))))
    t = num / den
    # atan of 1/2, 1, 3/2 and infinity as double-doubles (fdlibm's atanhi, atanlo)
    hi = _where(r4, 1.5707963267948966, _where(r3, 0.982793723247329, _where(
        r2, 0.7853981633974483, 0.4636476090008061)))
    lo = _where(r4, 6.123233995736766e-17, _where(r3, 1.3903311031230998e-17, _where(
        r2, 3.061616997868383e-17, 2.2698777452961687e-17)))
    z = t * t
    w = z * z
    s1 = 0.016285820115365782  # fdlibm's aT: odd and even terms of atan(t)/t - 1 in t^2
    s1 = _fma(s1, w, 0.049768779946159324)
    s1 = _fma(s1, w, 0.06661073137387531)
    s1 = _fma(s1, w, 0.09090887133436507)
    s1 = _fma(s1, w, 0.14285714272503466)
    s1 = z * (s1 * w + 0.3333333333333293)
    s2 = -0.036531572744216916
    s2 = _fma(s2, w, -0.058335701337905735)
    s2 = _fma(s2, w, -0.0769187620504483)
    s2 = _fma(s2, w, -0.11111110405462356)
    s2 = w * (s2 * w + -0.19999999999876483)
    head = _where(r1, hi, t)
    tail = _where(r1, t - (t * (s1 + s2) - lo), -(t * (s1 + s2)))
    return head, tail


@_jit(error_model="numpy", forceinline=True)
def vatan(x: float) -> float:
    """atan(x) from `_atan_parts`. Max error 0.74 ulp (60,000 points vs mpmath)."""
    a = abs(x)
    head, tail = _atan_parts(a)
    y = head + tail
    y = _where(a != a, x, y)
    y = _where(x < 0.0, -y, y)
    return _where(x == 0.0, x, y)


@_jit(error_model="numpy", forceinline=True)
def vatan2(y: float, x: float) -> float:
    """atan2(y, x) for finite nonzero x and y (elsewhere unspecified: callers recompute where
    `vatan2off`, as vsin's do): atan(|y|/|x|) with the quotient's rounding error added to the
    double-double `_atan_parts` (atan' = 1/(1 + q^2)), pi - it (TwoSum) for x < 0, and y's sign.
    Max error 0.85 ulp (80,000 points vs mpmath)."""
    ay = abs(y)
    ax = abs(x)
    q = ay / ax
    p = q * ax
    p_err = _mul_error(q, ax, p)  # q * ax = p + p_err exactly
    dq = ((ay - p) - p_err) / ax  # ay / ax = q + dq
    c = dq / (1.0 + q * q)
    c = _where(c == c, c, 0.0)
    head, tail = _atan_parts(q)
    d = 3.141592653589793 - head  # TwoSum: pi - head = d + d_err exactly
    v = d - 3.141592653589793
    d_err = (3.141592653589793 - (d - v)) + (-head - v)
    r = _where(x > 0.0, head + (tail + c), d + (d_err + (1.2246467991473532e-16 - (tail + c))))
    return _where(y < 0.0, -r, r)


@_jit(error_model="numpy", forceinline=True)
def vatan2off(y: float, x: float) -> bool:
    """Whether vatan2(y, x) is outside its range (x or y zero, inf or nan): a lane's flag."""
    return (x == 0.0 or y == 0.0 or x != x or y != y or abs(x) > 1.7976931348623157e308
            or abs(y) > 1.7976931348623157e308)


@_jit(error_model="numpy", forceinline=True)
def vlog(x: float) -> float:
    """log(x), by `_log_kernel`. Max error 0.79 ulp (40,000 points vs mpmath)."""
    return _log_kernel(x, 0.0)


@_jit(error_model="numpy", forceinline=True)
def _expm1_kernel(x):
    """expm1(x) = (hi + lo) * s1 * s2 for -45 <= x <= 710 (hi + lo a double-double, s1 s2 = 2**n).
    x = n ln2 + r as in vexp; expm1 = 2**n ((1 - 2**-n) + r + r^2 g(r)), summed in double-double
    (1 - 2**-n as a double-double; for n = 0 this is r + r^2 g(r), with no cancellation)."""
    k, r, r_err, g = _exp_reduced(x)
    ni = _bits(k) - _ROUNDER_BITS
    m = _where(ni > 60, 60, ni)  # beyond, 1 - 2**-n rounds to 1 anyway
    two_m = _float((1023 - m) << 52)
    u = 1.0 - two_m
    u_lo = 1.0 - (u + two_m)  # exact rest: 1 when n < -53
    s = u + r  # |u| >= |r| unless u == 0
    s_err = (u - s) + r
    tail = s_err + (u_lo + (r * r * g + r_err))
    y = s + tail
    y_lo = (s - y) + tail
    n1 = ni >> 1
    return y, y_lo, _float((n1 + 1023) << 52), _float((ni - n1 + 1023) << 52)


@_jit(error_model="numpy", forceinline=True)
def vexpm1(x: float) -> float:
    """expm1(x) = exp(x) - 1, by `_expm1_kernel`. Max error 0.97 ulp (75,000 points, at
    x = 37.35)."""
    xc = _where(x > 710.0, 710.0, x)  # overflows to inf by scaling
    xc = _where(xc < -45.0, -45.0, xc)  # expm1(-45) rounds to -1
    y, y_lo, s1, s2 = _expm1_kernel(xc)
    return _where(x == 0.0, x, y * s1 * s2)  # keeps -0.0


@_jit(error_model="numpy", forceinline=True)
def vtanh(x: float) -> float:
    """tanh(x) = -m / (2 + m) with m = expm1(-2|x|) as a double-double from `_expm1_kernel`, and
    the quotient corrected once with an exact product (q * d - p by one fused multiply-add,
    `_mul_error`: the value of Dekker's split, in one instruction): no cancellation at any x.
    One division: q and its correction are products by 1/d. Max error 0.77 ulp (321,000
    points vs mpmath)."""
    a = _where(abs(x) > 20.0, 20.0, abs(x))  # tanh(20) rounds to 1; nan stays nan
    m_hi, m_lo, s1, s2 = _expm1_kernel(-2.0 * a)
    scale = s1 * s2  # 2**n >= 2**-58, exact: so are the products
    m_hi = m_hi * scale
    m_lo = m_lo * scale
    d = 2.0 + m_hi  # 2 + m in double-double (|m| < 1)
    d_lo = ((2.0 - d) + m_hi) + m_lo
    r = 1.0 / d  # one division: q and its correction are products by 1/d
    q = m_hi * r
    p = q * d  # q * d exactly as p + p_err
    p_err = _mul_error(q, d, p)
    q = q + ((((m_hi - p) - p_err) + m_lo) - q * d_lo) * r
    t = _where(x < 0.0, q, -q)
    return _where(x == 0.0, x, t)  # keeps -0.0


HYPERBOLIC_LIMIT = 708.0  # vsinh/vcosh for |x| <= this (exp(|x|) and 2**-n normal); callers fix up


@_jit(error_model="numpy", forceinline=True)
def _exp_pair(a):
    """For 0 <= a <= HYPERBOLIC_LIMIT: exp(a) = (e + e_lo) s and exp(-a) = (q + q_lo) / s as
    double-doubles, s = 2**n (vexp's reduction; 1/s, also returned, is exact): q = 1/e with its
    residual by one fused multiply-add."""
    k, r, r_err, g = _exp_reduced(a)
    s0 = 1.0 + r
    s_err = (1.0 - s0) + r
    tail = s_err + (r * r * g + r_err)
    e = s0 + tail
    e_lo = (s0 - e) + tail
    q = 1.0 / e
    q_lo = q * (_fma(-e, q, 1.0) - e_lo * q)
    ni = _bits(k) - _ROUNDER_BITS
    return e, e_lo, q, q_lo, _float((ni + 1023) << 52), _float((1023 - ni) << 52)


@_jit(error_model="numpy", forceinline=True)
def vcosh(x: float) -> float:
    """cosh(x) = (exp(a) + exp(-a)) / 2, a = |x|, the two double-doubles of `_exp_pair` summed
    in double-double and rounded once, for |x| <= HYPERBOLIC_LIMIT (beyond, callers fix up with
    libm: the result there is unspecified). Max error 0.61 ulp (42,000 points vs mpmath)."""
    a = _where(abs(x) > HYPERBOLIC_LIMIT, 0.0, abs(x))  # nan stays nan
    e, e_lo, q, q_lo, s, inv = _exp_pair(a)
    big = e * s
    small = q * inv
    hi = big + small  # big >= small
    lo = ((big - hi) + small) + (e_lo * s + q_lo * inv)
    return (hi + lo) * 0.5


@_jit(error_model="numpy", forceinline=True)
def vsinh(x: float) -> float:
    """sinh(x) for |x| <= HYPERBOLIC_LIMIT (beyond, callers fix up with libm), a = |x|: below
    0.5, sinh's Taylor series a + a^3 P(a^2) to a^15 (the next term is below 1e-19 of it),
    the tail and a summed by one fused multiply-add; from 0.5, (exp(a) - exp(-a)) / 2 by
    `_exp_pair` in double-double, rounded once. The exp pair is vcosh's, of the same a: a
    kernel computing both of one value (a value and its derivative) computes it once. Max
    error 0.59 ulp (42,000 points vs mpmath)."""
    a = _where(abs(x) > HYPERBOLIC_LIMIT, 0.0, abs(x))  # nan stays nan
    z = a * a
    z2 = z * z
    low = _fma(_fma(0.0001984126984126984, z, 0.008333333333333333), z, 0.16666666666666666)
    high = _fma(_fma(7.647163731819816e-13, z, 1.6059043836821613e-10), z2,
                _fma(2.505210838544172e-08, z, 2.7557319223985893e-06))
    p = _fma(high, z * z2, low)  # 1/3! + z/5! + ... + z^6/15! (Estrin's scheme)
    near = _fma(a * z, p, a)
    e, e_lo, q, q_lo, s, inv = _exp_pair(a)
    big = e * s
    small = q * inv
    hi = big - small  # big >= small
    far = (hi + (((big - hi) - small) + (e_lo * s - q_lo * inv))) * 0.5
    y = _where(a < 0.5, near, far)
    y = _where(x < 0.0, -y, y)
    return _where(x == 0.0, x, y)  # keeps -0.0


ASINH_LIMIT = 1.0e150  # vasinh for |x| <= this (x * x finite); callers fix up beyond


@_jit(error_model="numpy", forceinline=True)
def vasinh(x: float) -> float:
    """asinh(x) for |x| <= ASINH_LIMIT (beyond, callers fix up with libm), a = |x|: from 0.5,
    log(a + sqrt(a^2 + 1)); below, log1p(a + a^2 / (1 + sqrt(1 + a^2))) (no cancellation).
    The argument of the log is a double-double (a^2 exact by a fused multiply-add, the square
    root and the quotient corrected once each) given to `_log_kernel` as its correction;
    below 1e-8, a itself. Max error 0.79 ulp (56,000 points vs mpmath)."""
    a = _where(abs(x) > ASINH_LIMIT, 0.0, abs(x))  # nan stays nan
    p = a * a
    p_err = _mul_error(a, a, p)
    q = p + 1.0  # 1 + a^2 = q + q_lo (TwoSum)
    v = q - p
    q_lo = ((1.0 - v) + (p - (q - v))) + p_err
    s = math.sqrt(q)  # sqrt(q + q_lo) = s + s_lo
    s_lo = (_fma(-s, s, q) + q_lo) / (2.0 * s)  # (the rounding of q - s^2)
    t = s + a  # s >= a
    far = _log_kernel(t, (((s - t) + a) + s_lo) / t)
    d = s + 1.0  # s >= 1: 1 + s = d + d_lo
    d_lo = ((s - d) + 1.0) + s_lo
    w = p / d  # a^2 / (1 + s) = w + w_lo
    w_lo = ((_fma(-w, d, p) + p_err) - w * d_lo) / d  # (the rounding of p - w d)
    u = a + w  # a >= w
    u_lo = ((a - u) + w) + w_lo
    m = 1.0 + u  # 1 >= u
    near = _log_kernel(m, (((1.0 - m) + u) + u_lo) / m)
    y = _where(a < 0.5, near, far)
    y = _where(a < 1e-8, a, y)  # asinh(a) = a - a^3/6: a, correctly rounded (1 + a rounds)
    y = _where(x < 0.0, -y, y)
    return _where(x == 0.0, x, y)  # keeps -0.0


@_jit(error_model="numpy", forceinline=True)
def verf(x: float) -> float:
    """erf(x), for a = |x| in four pieces, all computed (lanes select theirs):
    a < 0.5: a + a Q(a^2), Q of degree 9; 0.5 <= a < 2: erf(m) + (a - m) F(a - m) around
    m = 0.75 or 1.5, F of degree 17 with coefficients chosen per lane; 2 <= a < 6:
    1 - erfc(a) = 1 - exp(-a^2) R(1/a - 1/3), a^2 exact as a double-double, R of degree 15;
    a >= 6: 1 (erfc(6) < 2**-55). Max error 0.91 ulp (55,000 points vs mpmath)."""
    a = abs(x)
    z = a * a
    q = -1.4620256114391553e-07
    q = _fma(q, z, 1.6371164552892836e-06)
    q = _fma(q, z, -1.4923000283850108e-05)
    q = _fma(q, z, 0.00012055286128871108)
    q = _fma(q, z, -0.0008548326509718547)
    q = _fma(q, z, 0.005223977622008845)
    q = _fma(q, z, -0.026866170644999358)
    q = _fma(q, z, 0.11283791670954868)
    q = _fma(q, z, -0.3761263890318375)
    q = _fma(q, z, 0.1283791670955126)
    small = a + a * q
    lower = a < 1.0
    v = a - _where(lower, 0.75, 1.5)
    f = _where(lower, 3.7158329557374765e-07, -1.0127764745745375e-07)
    f = _fma(f, v, _where(lower, -4.977928781000484e-07, -2.834516684159426e-07))
    f = _fma(f, v, _where(lower, -3.2510398734351924e-06, 1.5310541946285568e-06))
    f = _fma(f, v, _where(lower, 7.165569368244511e-06, 5.712812907512405e-07))
    f = _fma(f, v, _where(lower, 2.211789820335107e-05, -1.4092041781626922e-05))
    f = _fma(f, v, _where(lower, -7.574557900936313e-05, 1.796132652289548e-05))
    f = _fma(f, v, _where(lower, -0.00010618466209095853, 7.768996900322256e-05))
    f = _fma(f, v, _where(lower, 0.0006239836727672716, -0.000254449278742781))
    f = _fma(f, v, _where(lower, 0.00018603225729046672, -9.291428407316154e-05))
    f = _fma(f, v, _where(lower, -0.003968260446341291, 0.0017098196279259489))
    f = _fma(f, v, _where(lower, 0.0023017883040216854, -0.002362677620942112))
    f = _fma(f, v, _where(lower, 0.018435235177909043, -0.0047430532048831076))
    f = _fma(f, v, _where(lower, -0.026872509532768436, 0.019326171998844406))
    f = _fma(f, v, _where(lower, -0.053242729167728105, -0.014866286152863627))
    f = _fma(f, v, _where(lower, 0.1506869693426267, -0.04459885845886105))
    f = _fma(f, v, _where(lower, 0.026788794549800304, 0.1387520040942334))
    f = _fma(f, v, _where(lower, -0.4821983018964055, -0.17839543383544407))
    f = _fma(f, v, _where(lower, 0.6429310691952074, 0.11893028922362937))
    mid = _where(lower, 0.7111556336535151, 0.9661051464753108) + (
        _where(lower, 4.69744077164289e-17, -3.3867031441680696e-17) + v * f)
    # x^2 = zc + z_err exactly (`_mul_error`); exp(-zc) as the derivative's exp(-(x*x)) is
    # written, so LLVM computes it once for erf and its derivative (lanes beyond 6 or inf
    # compute nan or 0 here and select 1 below)
    zc = x * x
    z_err = _mul_error(x, x, zc)
    w = 1.0 / a - 0.3333333333333333
    r = 3.5867168926124977
    r = _fma(r, w, -1.3277935842806077)
    r = _fma(r, w, -0.6686354412688925)
    r = _fma(r, w, 0.9989949777760435)
    r = _fma(r, w, -0.650853817539201)
    r = _fma(r, w, 0.16324493960321468)
    r = _fma(r, w, 0.17991582392866132)
    r = _fma(r, w, -0.2784698189838143)
    r = _fma(r, w, 0.18107643273241603)
    r = _fma(r, w, -0.0046577358376404965)
    r = _fma(r, w, -0.13484128691411748)
    r = _fma(r, w, 0.16147285618786794)
    r = _fma(r, w, -0.050146110722717754)
    r = _fma(r, w, -0.18141695624434123)
    r = _fma(r, w, 0.4893503400645558)
    r = _fma(r, w, 0.17900115118139)
    e = vexp(-zc) * r  # erfc(a) = exp(-zc - z_err) R = e (1 - z_err)
    big = (1.0 - e) + e * z_err
    y = _where(a < 0.5, small, _where(a < 2.0, mid, big))
    y = _where(a >= 6.0, 1.0, y)  # also inf
    y = _where(x < 0.0, -y, y)
    y = _where(a != a, x, y)  # nan (the pieces above picked `big` for it)
    return _where(x == 0.0, x, y)  # keeps -0.0


@_jit(error_model="numpy", forceinline=True)
def vlog1p(x: float) -> float:
    """log1p(x) = log(u) + err/u where u + err = 1 + x exactly (TwoSum), by `_log_kernel`.
    Max error 0.71 ulp (40,000 points vs mpmath)."""
    u = 1.0 + x
    v = u - 1.0
    err = (1.0 - (u - v)) + (x - v)
    return _where(x == 0.0, x, _log_kernel(u, err / u))  # keeps -0.0


# `a if cond else b` as one select: plain Numba loops (backends.numba.sum_lanes) write their
# if-expressions with it, since Numba compiles an if-expression to a branch.
vwhere = _where


@_jit(error_model="numpy", forceinline=True)
def vsigmoid(x: float) -> float:
    """1 / (1 + exp(-x)) from e = exp(-|x|): 1 / (1 + e) for x >= 0, e / (1 + e) below (no
    overflow, no cancellation: SciPy's expit's form, and the rows' `sigmoid` template's).
    e is the very `vexp(-abs(x))` softplus's lane form takes: inlined side by side, LLVM
    computes it once for both. Max error 2.13 ulp (40,000 points vs mpmath)."""
    e = vexp(-abs(x))
    return _where(x >= 0.0, 1.0, e) / (1.0 + e)



# lgamma and digamma live in a module of their own (`.vecmath_gamma`), imported on first use
# of one of its names here: a kernel calling neither never loads it.
GAMMA_NAMES = ("vlgamma", "vdigamma", "vlgamma_digamma", "vgammaoff", "GAMMA_LIMIT")
PUBLIC = ("vcbrt", "vexp", "vlog", "vexpm1", "vtanh", "vsinh", "vcosh", "vasinh", "vatanh", "verf",
          "vlog1p", "vlog2", "vlog10", "vsigmoid", "vsin", "vcos", "vsincos", "vpow", "vpowoff",
          "vpowprev", "vpowprevoff", "vhypot", "vatan", "vatan2", "vatan2off", "vsin_array",
          "vcos_array", "vxlogy", "vtan", *GAMMA_NAMES[:4])


def __getattr__(name: str):
    if name in GAMMA_NAMES:
        from . import vecmath_gamma

        return getattr(vecmath_gamma, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Every name lane code and the tape's interpreter may take from here (the lazy ones too).
NAMES = frozenset([*(name for name in globals() if not name.startswith("__")), *GAMMA_NAMES])
