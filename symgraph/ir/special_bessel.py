"""Bessel functions of integer order, J_n and Y_n, as plain Python on floats (compiled by Numba
as `symgraph.ir.special` is; see there): Miller's backward recurrence (normalised by
J0 + 2 sum J2k = 1) and the Neumann series for Y0, Y1 with the upward recurrence for Y_n, for
|x| <= 25; Hankel's asymptotic expansion beyond. Non-integer orders give nan.
"""

from __future__ import annotations

import math

from .special_gamma import _floor, dd_add, dd_div, dd_mul, dd_mul_d, two_prod

INF, NAN = math.inf, math.nan
EULER = 0.5772156649015329
MAX_ORDER = 10000.0  # besselj/bessely orders beyond give nan (the recurrences would run long)
BESSEL_ASYMPTOTIC = 25.0  # |x| above which besselj/bessely use Hankel's expansion
J_ASYMPTOTIC = 200.0  # besselj's (Miller's recurrence in double-double costs ~x steps)
RESCALE, UNSCALE = 2.0 ** 600, 2.0 ** -600  # Miller's values stay inside Dekker's range


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
    if x > J_ASYMPTOTIC and x > 0.5 * k * k:
        p, q = _hankel(k, x)
        c, s = _hankel_phase(k, x)
        return sign * math.sqrt(0.6366197723675814 / x) * (p * c - q * s)
    return sign * _besselj_positive(k, x)


def _bessely01(x):
    """(Y0(x), Y1(x)) for 0 < x <= BESSEL_ASYMPTOTIC: Neumann series over Miller's J_k."""
    m = _miller_start(1, x)
    j_next, j = 0.0, 1e-300
    total = 0.0
    y0_sum = 0.0  # sum_k (-1)^k J_2k / k
    y1_sum = 0.0  # sum_k (-1)^k (J_2k-1 - J_2k+1) / k
    j_odd_above = 0.0  # J_{2k+1} seen before J_{2k-1}
    two_x = 2.0 / x
    for i in range(m, 0, -1):  # j is J_i
        if i % 2 == 0:
            total += 2.0 * j
            half = i // 2
            sign = 1.0 if half % 2 == 0 else -1.0
            y0_sum += sign * j / half
        else:
            # J_i with i = 2k - 1 (k = (i + 1) / 2) and i = 2k + 1 (k = (i - 1) / 2)
            k_up = (i + 1) // 2
            y1_sum += (1.0 if k_up % 2 == 0 else -1.0) * j / k_up
            k_down = (i - 1) // 2
            if k_down > 0:
                y1_sum -= (1.0 if k_down % 2 == 0 else -1.0) * j / k_down
            j_odd_above = j
        j_next, j = j, i * two_x * j - j_next
        if abs(j) > 1e250:
            j *= 1e-250
            j_next *= 1e-250
            total *= 1e-250
            y0_sum *= 1e-250
            y1_sum *= 1e-250
            j_odd_above *= 1e-250
    total += j
    j0, j1 = j / total, j_next / total
    log_term = (math.log(x) - 0.6931471805599453) + EULER
    y0 = 0.6366197723675814 * (log_term * j0 - 2.0 * y0_sum / total)
    y1 = 0.6366197723675814 * (-j0 / x + log_term * j1 + y1_sum / total)
    return y0, y1


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
        y_prev = math.sqrt(0.6366197723675814 / x) * (p * s + q * c)
        p, q = _hankel(1, x)
        c, s = _hankel_phase(1, x)
        y = math.sqrt(0.6366197723675814 / x) * (p * s + q * c)
    else:
        y_prev, y = _bessely01(x)
    if k == 0:
        return sign * y_prev
    for i in range(1, k):  # upward recurrence, stable for Y
        y_prev, y = y, (2.0 * i / x) * y - y_prev
    return sign * y
