"""vecmath's cube root, `vcbrt`: the same correctly rounded bits as `ir.cuberoot.cbrt` (the
Python backend's, and constant folding's), as straight-line code a lane loop vectorises
(~4.5 ns a point on AVX2, where `cbrt`'s `math.pow` estimate takes ~29). The rules are
vecmath's (see its docstring).

Method: x = 2**(3k + r) m (r in 0..2, m in [1, 2)) from the bits; x**(-1/3) = 2**-k
2**(-r/3) m**(-1/3), a degree-4 fit of m**(-1/3) (4.5e-5 relative) and one fourth-order step
w (1 + h/3 + 2h^2/9 + 14h^3/81), h = 1 - x w^3, which leaves w within ~2 ulp without a
division. y = x w^2; then `cbrt`'s last correction, y + (x - y^3) w^2 / 3 with x - y^3 from
exact products (fused multiply-adds), so y is the correctly rounded root unless it lies within
~2**-50 ulp of a rounding tie: the bits of `cbrt` on 4 million points of every exponent,
subnormals and perfect cubes included.
"""

from __future__ import annotations

import math

from .deferred import jit as _jit
from .runtime.bits import _bits, _float, _fma, _mul_error, _where
from .vecmath_log import _ROUNDER, _ROUNDER_BITS

_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000


@_jit(error_model="numpy", forceinline=True)
def vcbrt(x: float) -> float:
    """The real cube root of x, correctly rounded (`ir.cuberoot.cbrt`'s bits); keeps -0.0,
    +-inf and nan."""
    a = abs(x)
    finite = (a > 0.0) & (a < math.inf)  # 0, inf and nan are their own roots
    tiny = a < 2.409919865102884e-181  # below 2**-600 (subnormals too): times 2**600 first
    huge = a > 8.452712498170644e270  # above 2**900: times 2**-300 (y^3 must not overflow)
    s = _where(tiny, a * 4.149515568880993e180, _where(huge, a * 4.909093465297727e-91, a))
    s = _where(finite, s, 1.0)
    ix = _bits(s)
    f = _float((ix & _MANTISSA) + _ONE_BITS) - 1.0  # s = 2**(e - 1023) (1 + f)
    e = _float((ix >> 52) + _ROUNDER_BITS) - _ROUNDER  # float(e) without a conversion
    t = (e - 1.0) * 0.3333333333333333 + _ROUNDER  # q = round((e - 1)/3): e = 3q + r
    r = e - 3.0 * (t - _ROUNDER)
    two_k = _float((1364 - (_bits(t) - _ROUNDER_BITS)) << 52)  # 2**(341 - q) = 2**-k
    w = _fma(_fma(_fma(_fma(0.02778280101858424, f, -0.10523065061810691), f,
                       0.20226394976640635), f, -0.33104630184634604), f, 0.9999550344814722)
    w = w * two_k * _where(r == 0.0, 1.0, _where(r == 1.0, 0.7937005259840998,
                                                   0.6299605249474366))
    h = _fma(s, -(w * w * w), 1.0)
    w = _fma(w * h, _fma(h, _fma(h, 0.1728395061728395, 0.2222222222222222),
                         0.3333333333333333), w)
    y = s * w * w
    p = y * y
    c1 = p * y
    residual = ((s - c1) - _mul_error(p, y, c1)) - _mul_error(y, y, p) * y  # s - c1: exact
    y = _fma(residual * (w * w), 0.3333333333333333, y)
    y = y * _where(tiny, 6.223015277861142e-61, _where(huge, 1.2676506002282294e30, 1.0))
    y = _where(x > 0.0, y, -y)
    return _where(finite, y, x)
