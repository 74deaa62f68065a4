"""Bessel functions of integer order, J_n and Y_n, as plain Python on floats (compiled by Numba
as `symgraph.ir.special` is; see there): Miller's backward recurrence (normalised by
J0 + 2 sum J2k = 1) and the Neumann series for Y0, Y1 with the upward recurrence for Y_n, all
in double-double (relative accuracy, zeros included), for |x| <= 200; Hankel's asymptotic
expansion in doubles beyond (absolute accuracy). Non-integer orders give nan.
"""

from __future__ import annotations

import math

from .special_gamma import _floor, dd_add, dd_div, dd_mul, dd_mul_d, two_prod, two_sum

INF, NAN = math.inf, math.nan
EULER, EULER_LO = 0.5772156649015329, -4.942915152430645e-18
LN2_HI, LN2_LO = 0.6931471805599453, 2.3190468138462996e-17
TWO_PI_HI, TWO_PI_LO = 0.6366197723675814, -3.935735335036497e-17  # 2 / pi
MAX_ORDER = 10000.0  # besselj/bessely orders beyond give nan (the recurrences would run long)
BESSEL_ASYMPTOTIC = 200.0  # |x| above which Hankel's expansion (Miller's costs ~x steps)
RESCALE, UNSCALE = 2.0 ** 600, 2.0 ** -600  # Miller's values stay inside Dekker's range
# Below this |x|, the series' first terms (J_n) and expansions (Y0, Y1) are exact to rounding,
# and Miller's recurrence, growing by ~2m/x a step, would overflow (x ~1e-120 and below).
SMALL = 1e-8


def _hankel(n, x):
    """(P, Q) of Hankel's expansion of order n at x > 0 (terms until they stop shrinking)."""
    mu = 4.0 * n * n
    p, q = 1.0, 0.0
    term = 1.0
    eight_x = 8.0 * x
    previous = INF
    for k in range(1, 60):
        term *= (mu - (2.0 * k - 1.0) ** 2) / (k * eight_x)
        if abs(term) >= previous or term == 0.0:
            break
        previous = abs(term)
        if k % 4 == 1:
            q += term
        elif k % 4 == 2:
            p -= term
        elif k % 4 == 3:
            q -= term
        else:
            p += term
    return p, q


def _hankel_phase(n, x):
    """(cos(chi), sin(chi)) for chi = x - (n/2 + 1/4) pi, from cos x and sin x (exact
    reduction by libm) and the phase's exact multiple of pi/4."""
    c, s = math.cos(x), math.sin(x)
    r = 0.7071067811865476
    k = int(n) % 4  # chi = x - pi/4 - k pi/2
    cos0, sin0 = r * (c + s), r * (s - c)  # k = 0
    if k == 0:
        return cos0, sin0
    if k == 1:
        return sin0, -cos0
    if k == 2:
        return -cos0, -sin0
    return -sin0, cos0


def _miller_start(n, x):
    big = max(float(n), x)
    m = int(big + 30.0 + 5.0 * math.sqrt(big))  # enough for double-double
    return m + m % 2  # even


def _two_over(x):
    # 2 / x in double-double
    q = 2.0 / x
    p, e = two_prod(q, x)
    return q, ((2.0 - p) - e) / x


def _besselj_positive(k, x):
    """J_k(x) for an integer k >= 0 and x > 0 (Miller's recurrence in double-double: the
    normalising sum is ~1 where J_k is ~0.1, whose rounding errors doubles would keep)."""
    m = _miller_start(k, x)
    nh, nl = 0.0, 0.0  # J_{i+1}, unnormalised
    jh, jl = 1.0, 0.0  # J_i
    th, tl = 0.0, 0.0  # J_0 + 2 sum J_2i
    wh, wl = 0.0, 0.0  # J_k
    qh, ql = _two_over(x)
    for i in range(m, 0, -1):
        if i == k:
            wh, wl = jh, jl
        if i % 2 == 0:
            th, tl = dd_add(th, tl, 2.0 * jh, 2.0 * jl)
        fh, fl = dd_mul_d(qh, ql, float(i))
        fh, fl = dd_mul(fh, fl, jh, jl)
        fh, fl = dd_add(fh, fl, -nh, -nl)
        nh, nl, jh, jl = jh, jl, fh, fl
        if abs(jh) > RESCALE:  # powers of two: exact
            jh, jl, nh, nl = jh * UNSCALE, jl * UNSCALE, nh * UNSCALE, nl * UNSCALE
            th, tl, wh, wl = th * UNSCALE, tl * UNSCALE, wh * UNSCALE, wl * UNSCALE
    th, tl = dd_add(th, tl, jh, jl)
    if k == 0:
        wh, wl = jh, jl
    wh, wl = dd_div(wh, wl, th, tl)
    return wh + wl


def _besselj_small(k, x):
    """J_k(x) for 0 < x < SMALL: (x/2)**k / k! (1 - (x/2)**2 / (k + 1)), the power in
    double-double (k roundings would be k/2 ulps), down to 0 where it underflows."""
    half = 0.5 * x
    th, tl = 1.0, 0.0
    for i in range(1, k + 1):
        th, tl = dd_mul_d(th, tl, half)
        th, tl = dd_div(th, tl, float(i), 0.0)
        if th == 0.0:
            return 0.0
    t = th + tl
    return t - t * (half * half / (k + 1.0))


def besselj(n, x):
    """J_n(x) for integer n (else nan); SciPy's edges (``jv``): nan at +-inf."""
    if n != n or x != x or n != _floor(n) or x == INF or x == -INF or abs(n) > MAX_ORDER:
        return NAN
    k = int(abs(n))
    sign = -1.0 if (n < 0.0 and k % 2 == 1) else 1.0
    if x < 0.0:
        x = -x
        if k % 2 == 1:
            sign = -sign
    if x == 0.0:
        return sign * (1.0 if k == 0 else 0.0)
    if x > BESSEL_ASYMPTOTIC and x > 0.5 * k * k:
        p, q = _hankel(k, x)
        c, s = _hankel_phase(k, x)
        return sign * math.sqrt(0.6366197723675814 / x) * (p * c - q * s)
    if x < SMALL:
        return sign * _besselj_small(k, x)
    return sign * _besselj_positive(k, x)


def _bessely01(x):
    """(Y0(x), Y1(x)) as double-double pairs for 0 < x <= BESSEL_ASYMPTOTIC: the Neumann series
    over Miller's J_k, all in double-double (its terms are ~1 where Y is ~0.1)."""
    m = _miller_start(1, x)
    nh, nl, jh, jl = 0.0, 0.0, 1.0, 0.0  # J_{i+1}, J_i unnormalised
    th, tl = 0.0, 0.0  # J_0 + 2 sum J_2k
    ah, al = 0.0, 0.0  # sum_k (-1)^k J_2k / k
    bh, bl = 0.0, 0.0  # sum_k (-1)^k (J_2k-1 - J_2k+1) / k
    qh, ql = _two_over(x)
    for i in range(m, 0, -1):  # j is J_i
        if i % 2 == 0:
            th, tl = dd_add(th, tl, 2.0 * jh, 2.0 * jl)
            half = i // 2
            sign = 1.0 if half % 2 == 0 else -1.0
            dh, dl = dd_div(jh, jl, sign * half, 0.0)
            ah, al = dd_add(ah, al, dh, dl)
        else:
            # J_i with i = 2k - 1 (k = (i + 1) / 2) and i = 2k + 1 (k = (i - 1) / 2)
            k_up = (i + 1) // 2
            dh, dl = dd_div(jh, jl, (1.0 if k_up % 2 == 0 else -1.0) * k_up, 0.0)
            bh, bl = dd_add(bh, bl, dh, dl)
            k_down = (i - 1) // 2
            if k_down > 0:
                dh, dl = dd_div(jh, jl, (-1.0 if k_down % 2 == 0 else 1.0) * k_down, 0.0)
                bh, bl = dd_add(bh, bl, dh, dl)
        fh, fl = dd_mul_d(qh, ql, float(i))
        fh, fl = dd_mul(fh, fl, jh, jl)
        fh, fl = dd_add(fh, fl, -nh, -nl)
        nh, nl, jh, jl = jh, jl, fh, fl
        if abs(jh) > RESCALE:  # powers of two: exact
            jh, jl, nh, nl = jh * UNSCALE, jl * UNSCALE, nh * UNSCALE, nl * UNSCALE
            th, tl, ah, al = th * UNSCALE, tl * UNSCALE, ah * UNSCALE, al * UNSCALE
            bh, bl = bh * UNSCALE, bl * UNSCALE
    th, tl = dd_add(th, tl, jh, jl)
    j0h, j0l = dd_div(jh, jl, th, tl)
    j1h, j1l = dd_div(nh, nl, th, tl)
    ah, al = dd_div(ah, al, th, tl)
    bh, bl = dd_div(bh, bl, th, tl)
    lh, ll = _log_dd(x)  # log(x / 2) + euler
    lh, ll = dd_add(lh, ll, -LN2_HI, -LN2_LO)
    lh, ll = dd_add(lh, ll, EULER, EULER_LO)
    y0h, y0l = dd_mul(lh, ll, j0h, j0l)
    y0h, y0l = dd_add(y0h, y0l, -2.0 * ah, -2.0 * al)
    y0h, y0l = dd_mul(y0h, y0l, TWO_PI_HI, TWO_PI_LO)
    y1h, y1l = dd_mul(lh, ll, j1h, j1l)
    y1h, y1l = dd_add(y1h, y1l, bh, bl)
    dh, dl = dd_div(j0h, j0l, x, 0.0)
    y1h, y1l = dd_add(y1h, y1l, -dh, -dl)
    y1h, y1l = dd_mul(y1h, y1l, TWO_PI_HI, TWO_PI_LO)
    return y0h, y0l, y1h, y1l


def _bessely01_small(x):
    """(Y0, Y1) as double-double pairs for 0 < x < SMALL: (2/pi)(log(x/2) + euler) and
    -2/(pi x) + (x/pi)(log(x/2) + euler - 1/2); the terms left are below rounding. Y1 is -inf
    where 2/(pi x) overflows."""
    lh, ll = _log_dd(x)
    lh, ll = dd_add(lh, ll, -LN2_HI, -LN2_LO)
    lh, ll = dd_add(lh, ll, EULER, EULER_LO)
    y0h, y0l = dd_mul(lh, ll, TWO_PI_HI, TWO_PI_LO)
    if TWO_PI_HI / x == INF:
        return y0h, y0l, -INF, 0.0
    dh, dl = dd_div(TWO_PI_HI, TWO_PI_LO, x, 0.0)
    eh, el = dd_add(lh, ll, -0.5, 0.0)
    eh, el = dd_mul(eh, el, TWO_PI_HI, TWO_PI_LO)
    eh, el = dd_mul_d(eh, el, 0.5 * x)
    y1h, y1l = dd_add(eh, el, -dh, -dl)
    return y0h, y0l, y1h, y1l


def _log_dd(x):
    """log(x) in double-double for x > 0 (normal): e log 2 + 2 atanh((f - 1) / (f + 1)),
    f = x / 2**e in [0.707, 1.414), the series' first terms in double-double."""
    f, e = math.frexp(x)
    if f < 0.7071067811865476:
        f, e = 2.0 * f, e - 1
    sh, sl = two_sum(f, 1.0)
    sh, sl = dd_div(f - 1.0, 0.0, sh, sl)  # f - 1 is exact
    wh, wl = dd_mul(sh, sl, sh, sl)
    total = 0.0
    for k in range(21, 2, -1):  # 1/(2k + 1) s**2k, below 3e-5 of the sum: doubles suffice
        total = total * wh + 1.0 / (2.0 * k + 1.0)
    th, tl = dd_mul_d(wh, wl, total)
    th, tl = dd_add(th, tl, 0.2, -1.1102230246251566e-17)
    th, tl = dd_mul(th, tl, wh, wl)
    th, tl = dd_add(th, tl, 0.3333333333333333, 1.850371707708594e-17)
    th, tl = dd_mul(th, tl, wh, wl)
    th, tl = dd_add(th, tl, 1.0, 0.0)
    th, tl = dd_mul(th, tl, 2.0 * sh, 2.0 * sl)
    eh, el = dd_mul_d(LN2_HI, LN2_LO, float(e))
    return dd_add(eh, el, th, tl)


def bessely(n, x):
    """Y_n(x) for integer n (else nan) and x >= 0; SciPy's edges (``yv``): -inf at 0 (times
    (-1)**n for negative n), nan for x < 0 and at inf."""
    if n != n or x != x or n != _floor(n) or x < 0.0 or x == INF or abs(n) > MAX_ORDER:
        return NAN
    k = int(abs(n))
    sign = -1.0 if (n < 0.0 and k % 2 == 1) else 1.0
    if x == 0.0:
        return -sign * INF
    if x > BESSEL_ASYMPTOTIC and x > 0.5 * k * k:
        p, q = _hankel(k, x)
        c, s = _hankel_phase(k, x)
        return sign * math.sqrt(0.6366197723675814 / x) * (p * s + q * c)
    if x > BESSEL_ASYMPTOTIC:
        p, q = _hankel(0, x)
        c, s = _hankel_phase(0, x)
        y0h, y0l = math.sqrt(0.6366197723675814 / x) * (p * s + q * c), 0.0
        p, q = _hankel(1, x)
        c, s = _hankel_phase(1, x)
        y1h, y1l = math.sqrt(0.6366197723675814 / x) * (p * s + q * c), 0.0
    elif x < SMALL:
        y0h, y0l, y1h, y1l = _bessely01_small(x)
    else:
        y0h, y0l, y1h, y1l = _bessely01(x)
    if k == 0:
        return sign * (y0h + y0l)
    if y1h == -INF:
        return -sign * INF
    qh, ql = _two_over(x)
    for i in range(1, k):  # upward recurrence, stable for Y
        fh, fl = dd_mul_d(qh, ql, float(i))
        fh, fl = dd_mul(fh, fl, y1h, y1l)
        fh, fl = dd_add(fh, fl, -y0h, -y0l)
        if not abs(fh) < INF:  # Y_n past the range where x << n: it is large and negative
            return -sign * INF
        y0h, y0l, y1h, y1l = y1h, y1l, fh, fl
    return sign * (y1h + y1l)
