"""The cube root every backend computes: correctly rounded, the same bits everywhere.

libm's ``cbrt`` is not correctly rounded (glibc's gives 3.0000000000000004 for 27), Numba's
``np.cbrt`` is ``pow(x, 1/3)`` (off by up to ~60 ulp for large x), and NumPy's is libm's or, on
AVX-512 machines, its own SIMD routine: three answers. `cbrt` is one answer for all of them:
the Python backend's rows call it (its source is written into the generated module, which needs
only NumPy), its batches call `cbrt_array` (the same bits, whole-array NumPy operations), Numba's
kernels `vecmath_root.vcbrt` (the same bits, straight-line code that vectorises; standalone
files this source), and constant folding calls it. Perfect cubes are exact (``cbrt(27) == 3``).

Method: pow's estimate, one Newton step (within ~1 ulp), then a last correction
``y + (x - y^3) / (3 y^2)`` with ``x - y^3`` computed to ~2^-103 relative from exact (Dekker)
products, so the result is the correctly rounded root unless the root lies within ~2^-50 ulp
of a rounding tie (none in the tests' 10^5 points checked against mpmath). Only arithmetic,
``math.pow``, ``abs`` and conditional expressions: valid Python, valid Numba, and a form
the Numba runtime's lowering inlines as selects.
"""

from __future__ import annotations

import inspect
import math

import numpy as np


def cbrt(x: float) -> float:
    """The real cube root of `x`, correctly rounded; keeps -0.0, +-inf and nan."""
    a = abs(x)
    finite = a > 0.0 and a < math.inf  # 0, inf and nan are their own roots
    tiny = a < 2.409919865102884e-181  # below 2**-600: scale by 2**600 = (2**200)**3 first
    huge = a > 8.452712498170644e270  # above 2**900: by 2**-300 (y^3 must not overflow)
    s = a * 4.149515568880993e180 if tiny else (a * 4.909093465297727e-91 if huge else a)
    s = s if finite else 1.0
    y = math.pow(s, 0.3333333333333333)
    y = y - (y - s / (y * y)) * 0.3333333333333333
    # y^3 = (p + q) y with p + q = y^2 exactly, and p y = c1 + c2 exactly (Dekker's products)
    h = 134217729.0 * y
    y1 = h - (h - y)
    y2 = y - y1
    p = y * y
    q = ((y1 * y1 - p) + 2.0 * y1 * y2) + y2 * y2
    h = 134217729.0 * p
    p1 = h - (h - p)
    p2 = p - p1
    c1 = p * y
    c2 = ((p1 * y1 - c1) + p1 * y2 + p2 * y1) + p2 * y2
    r = ((s - c1) - c2) - q * y  # s - c1 is exact (Sterbenz): y^3 is within a few ulp of s
    y = y + r / (3.0 * p)
    y = y * 6.223015277861142e-61 if tiny else (y * 1.2676506002282294e30 if huge else y)
    y = y if x > 0.0 else -y
    return y if finite else x


def cbrt_array(x):
    """`cbrt` of every element of `x` (float64), the same bits, as whole-array NumPy
    operations (~30 ns an element, where `np.vectorize(cbrt)` takes ~1,650): NumPy's cbrt is
    the estimate, then `cbrt`'s Newton step and exact-residual correction."""
    with np.errstate(all="ignore"):  # the scaled-away lanes overflow, unused
        a = np.abs(np.asarray(x, dtype=np.float64))
        finite = (a > 0.0) & (a < np.inf)
        tiny = a < 2.409919865102884e-181
        huge = a > 8.452712498170644e270
        s = np.where(tiny, a * 4.149515568880993e180, np.where(huge, a * 4.909093465297727e-91, a))
        s = np.where(finite, s, 1.0)
        y = np.cbrt(s)
        y = y - (y - s / (y * y)) * 0.3333333333333333
        h = 134217729.0 * y
        y1 = h - (h - y)
        y2 = y - y1
        p = y * y
        q = ((y1 * y1 - p) + 2.0 * y1 * y2) + y2 * y2
        h = 134217729.0 * p
        p1 = h - (h - p)
        p2 = p - p1
        c1 = p * y
        c2 = ((p1 * y1 - c1) + p1 * y2 + p2 * y1) + p2 * y2
        y = y + (((s - c1) - c2) - q * y) / (3.0 * p)
        y = y * np.where(tiny, 6.223015277861142e-61, np.where(huge, 1.2676506002282294e30, 1.0))
        return np.where(finite, np.copysign(y, x), x)


def source(name: str, of=cbrt) -> str:
    """The source of `cbrt` (or `of`, `cbrt_array`), defining `name`: one prelude entry of a
    generated module (one string, so that preludes deduplicated line by line keep it whole)."""
    text = inspect.getsource(of)
    return text.replace(f"def {of.__name__}(", f"def {name}(", 1).rstrip("\n")
