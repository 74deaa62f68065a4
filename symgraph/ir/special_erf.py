"""erfinv and erfcinv as plain Python on floats (compiled by Numba as `symgraph.ir.special`
is; see there): Giles' approximation, then Halley steps on erf (or on erfc near +-1, where
1 - y is exact), so the result is as good as libm's erf/erfc; below 1e-15 Newton steps on the
logarithm of erfc's asymptotics.
"""

from __future__ import annotations

import math

INF, NAN = math.inf, math.nan
TWO_SQRT_PI = 1.1283791670955126  # 2 / sqrt(pi)


def _giles(y, w):
    """Giles' single-precision erfinv(y), w = -log((1 - y)(1 + y)): a starting point."""
    if w < 5.0:
        w -= 2.5
        p = 2.81022636e-08
        p = 3.43273939e-07 + p * w
        p = -3.5233877e-06 + p * w
        p = -4.39150654e-06 + p * w
        p = 0.00021858087 + p * w
        p = -0.00125372503 + p * w
        p = -0.00417768164 + p * w
        p = 0.246640727 + p * w
        p = 1.50140941 + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        p = 0.000100950558 + p * w
        p = 0.00134934322 + p * w
        p = -0.00367342844 + p * w
        p = 0.00573950773 + p * w
        p = -0.0076224613 + p * w
        p = 0.00943887047 + p * w
        p = 1.00167406 + p * w
        p = 2.83297682 + p * w
    return p * y


def _erfc_inverse_small(z):
    """erfcinv(z) for 0 < z <= 0.5 (x >= 0.47): Halley steps on erfc(x) = z, from Giles'
    start, or below z = 1e-15 from Newton steps on the logarithm of erfc's asymptotics."""
    if z < 1e-15:
        target = math.log(z)
        x = math.sqrt(-target)
        for _ in range(6):
            x2 = x * x
            # log erfc(x) ~ -x^2 - log(x sqrt(pi)) + log(1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6))
            value = -x2 - math.log(x * 1.7724538509055160) + math.log1p(
                -0.5 / x2 + 0.75 / (x2 * x2) - 1.875 / (x2 * x2 * x2))
            x -= (value - target) / (-2.0 * x - 1.0 / x)
        if z < 1e-300:  # erfc(x) would be subnormal: the asymptotic root is the answer
            return x
    else:
        x = _giles(1.0 - z, -math.log(z * (2.0 - z)))
    for _ in range(10):
        f = math.erfc(x) - z
        slope = -TWO_SQRT_PI * math.exp(-x * x)
        step = f / (slope + x * f)
        x -= step
        if abs(step) <= 1e-17 * x:
            break
    return x


def _erf_inverse_middle(y):
    """erfinv(y) for |y| < 0.5: Halley steps on erf(x) = y."""
    if y == 0.0:
        return y
    x = _giles(y, -math.log((1.0 - y) * (1.0 + y)))
    for _ in range(4):
        f = math.erf(x) - y
        slope = TWO_SQRT_PI * math.exp(-x * x)
        step = f / (slope + x * f)
        x -= step
        if abs(step) <= 1e-17 * abs(x):
            break
    return x


def erfinv(y):
    """The inverse of erf on [-1, 1]; SciPy's edges: +-inf at +-1, nan outside."""
    if y != y or y < -1.0 or y > 1.0:
        return NAN
    if y == 1.0:
        return INF
    if y == -1.0:
        return -INF
    if y >= 0.5:
        return _erfc_inverse_small(1.0 - y)
    if y <= -0.5:
        return -_erfc_inverse_small(1.0 + y)
    return _erf_inverse_middle(y) + 0.0  # +0.0: erfinv(-0.0) is 0.0, as SciPy's


def erfcinv(z):
    """The inverse of erfc on [0, 2]; SciPy's edges: inf at 0, -inf at 2, nan outside."""
    if z != z or z < 0.0 or z > 2.0:
        return NAN
    if z == 0.0:
        return INF
    if z == 2.0:
        return -INF
    if z <= 0.5:
        return _erfc_inverse_small(z)
    if z >= 1.5:
        return -_erfc_inverse_small(2.0 - z)
    return -_erf_inverse_middle(z - 1.0)
