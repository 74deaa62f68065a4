"""Double-double arithmetic (a value as an unevaluated sum hi + lo, ~106 bits) and gamma on
x > 0 in it: what makes `symgraph.ir.special`'s gamma, beta, lbeta and polygamma
accurate to an ulp or two (a double's own rounding errors would add up to several).

Plain Python on floats, as `symgraph.ir.special` (Numba compiles these functions the same way):
Dekker's splitting, not fma, so both backends compute the same bits.
"""

from __future__ import annotations

import math

SPLITTER = 134217729.0  # 2**27 + 1: Dekker's split of a double into two 26-bit halves
SCALE_UP, SCALE_DOWN = 2.0 ** 500, 2.0 ** -500  # keeps the products inside the split's range

# Taylor coefficients of gamma about 1.5, highest order first: orders 40..9 as doubles (their
# terms are < 1e-6 of gamma's value on |h| <= 0.5), orders 8..0 as (hi, lo) pairs.
_HIGH = (
    6.029181784375385e-08, -9.043772671727379e-08, 1.3565658995501827e-07, -2.0348488463029657e-07,
    3.052273261898683e-07, -4.578409873958633e-07, 6.867614763714544e-07, -1.030142202751356e-06,
    1.545213274612561e-06, -2.317819838132976e-06, 3.4767295727359118e-06, -5.215093897948874e-06,
    7.822639694049432e-06, -1.1733956658937063e-05, 1.7600927783229516e-05,
    -2.6401373662487027e-05, 3.9602015464878785e-05, -5.9402910632315354e-05,
    8.910408456105664e-05, -0.000133655423459294, 0.00020048137704905742, -0.00030071767120056376,
    0.00045106552539565955, -0.0006765708410600124, 0.001014787742151478, -0.0015220100711244283,
    0.0022825897637902674, -0.003422802497359706, 0.0051316435019123875, -0.0076902113642415785,
    0.011522515392399228, -0.017222443113464624)
_LOW_ORDER = (
    (0.025837606455756203, 1.2101509033777396e-18), (-0.038001935554865134,
    3.3298299826997898e-18), (0.05861030381717629, 2.0488848309376898e-18), (-0.0775230522998542,
    2.5373663874836554e-18), (0.14464535904462153, 1.3217914205834404e-17), (-0.10729480456477221,
    -2.9549715653687102e-18), (0.4148134536883012, -2.4237908897880615e-17), (0.03233839744888501,
    3.4409831328094518e-18), (0.886226925452758, -3.8332932499128993e-17))

# The Bernoulli numbers B_2k, k = 1..10, of digamma's and polygamma's asymptotic series.
BERNOULLI = (0.16666666666666666, -0.03333333333333333, 0.023809523809523808,
             -0.03333333333333333, 0.07575757575757576, -0.2531135531135531, 1.1666666666666667,
             -7.092156862745098, 54.971177944862156, -529.1242424242424)


def _floor(x):
    # A float, for every x: math.floor raises for inf and nan in Python, and in Numba it is an
    # int64 conversion, undefined (LLVM poison) beyond 2**63, which the optimiser may exploit.
    if abs(x) < 4503599627370496.0:  # beyond 2**52 every float is an integer
        return float(math.floor(x))
    return x


def two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e = a + b exactly (Knuth)."""
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


def _quick_two_sum(a, b):
    s = a + b
    return s, b - (s - a)


def _split(a):
    t = SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_prod(a, b):
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (Dekker; |a|, |b| < 1e290)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def dd_add(ah, al, bh, bl):
    s, e = two_sum(ah, bh)
    return _quick_two_sum(s, e + (al + bl))


def dd_mul(ah, al, bh, bl):
    p, e = two_prod(ah, bh)
    return _quick_two_sum(p, e + (ah * bl + al * bh))


def dd_mul_d(ah, al, b):
    p, e = two_prod(ah, b)
    return _quick_two_sum(p, e + al * b)


def dd_div(ah, al, bh, bl):
    q = ah / bh
    p, e = dd_mul_d(bh, bl, q)
    r = ((ah - p) - e + al) / bh
    return _quick_two_sum(q, r)


def dd_log(hi, lo):
    """log(hi + lo) for hi > 0, to about an ulp of the result even where it is near 0."""
    return math.log(hi) + lo / hi


def _gamma_core(hh, hl):
    """gamma(1.5 + h) as (hi, lo) for |h| <= 0.5, h = hh + hl."""
    total = 0.0
    for c in _HIGH:
        total = total * hh + c
    th, tl = total, 0.0
    for i in range(len(_LOW_ORDER)):
        th, tl = dd_mul(th, tl, hh, hl)
        th, tl = dd_add(th, tl, _LOW_ORDER[i][0], _LOW_ORDER[i][1])
    return th, tl


def gamma_dd(x):
    """gamma(x) for 0 < x <= 171.7 as (hi, lo, scale): gamma = (hi + lo) * scale, scale a power
    of two (hi stays below 2**500, where Dekker's split cannot overflow)."""
    if x < 1.0:  # gamma(x) = gamma(1 + x) / x, h = x - 0.5 kept exactly
        hh, hl = two_sum(x, -0.5)
        gh, gl = _gamma_core(hh, hl)
        gh, gl = dd_div(gh, gl, x, 0.0)
        return gh, gl, 1.0
    z = x
    ph, pl, scale = 1.0, 0.0, 1.0
    while z >= 2.0:  # z - 1 is exact: the recurrence's factors are x - 1, x - 2, ...
        z -= 1.0
        ph, pl = dd_mul_d(ph, pl, z)
        if ph > SCALE_UP:
            ph, pl, scale = ph * SCALE_DOWN, pl * SCALE_DOWN, scale * SCALE_UP
    gh, gl = _gamma_core(z - 1.5, 0.0)
    gh, gl = dd_mul(ph, pl, gh, gl)
    return gh, gl, scale


def dd_power(hi, lo, k):
    """(hi + lo)**k for an integer k >= 1 (binary powering: log2(k) roundings of ~2**-104)."""
    rh, rl = 1.0, 0.0
    while k > 0:
        if k % 2 == 1:
            rh, rl = dd_mul(rh, rl, hi, lo)
        k //= 2
        if k > 0:
            hi, lo = dd_mul(hi, lo, hi, lo)
    return rh, rl


def polygamma_positive(k, x, m):
    """|psi_k(x)| for an integer 1 <= k <= 20 and x > 0 with x**-(k+1) < 1e250, in double-double:
    k! [sum_{j<m} (x + j)**-(k+1) + tail(x + m)], x + m >= 15 + k, tail(z) = 1/(k z**k) +
    1/(2 z**(k+1)) + sum_i B2i (2i+k-1)!/((2i)! k!) z**-(2i+k) (that sum in doubles: it is below
    1e-3 of the total)."""
    zh, zl = two_sum(x, float(m))
    rh, rl = dd_div(1.0, 0.0, zh, zl)
    ph, pl = dd_power(rh, rl, k)  # z**-k
    th, tl = dd_div(ph, pl, float(k), 0.0)
    qh, ql = dd_mul(ph, pl, rh, rl)  # z**-(k+1)
    th, tl = dd_add(th, tl, 0.5 * qh, 0.5 * ql)
    inverse2 = rh * rh
    power = qh * rh
    ratio = (k + 1.0) / 2.0  # (2i + k - 1)! / ((2i)! k!) for i = 1
    series = 0.0
    for i in range(1, 11):
        series += BERNOULLI[i - 1] * ratio * power
        power *= inverse2
        ratio *= (2.0 * i + k) * (2.0 * i + k + 1.0) / ((2.0 * i + 1.0) * (2.0 * i + 2.0))
    th, tl = dd_add(th, tl, series, 0.0)
    for j in range(m - 1, -1, -1):  # smallest terms first
        sh, sl = two_sum(x, float(j))  # x + j exactly
        sh, sl = dd_div(1.0, 0.0, sh, sl)
        sh, sl = dd_power(sh, sl, k + 1)
        th, tl = dd_add(th, tl, sh, sl)
    factorial = 1.0
    for i in range(2, k + 1):  # exact up to 22!
        factorial *= i
    th, tl = dd_mul(th, tl, factorial, 0.0)
    return th + tl
