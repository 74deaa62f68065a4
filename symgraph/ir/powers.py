"""pow_prev(x, y, p): x**(y - 1) from p = x**y, the op d/dx x**y = y x**(y-1) is built with.

Two pows per power (x**y and x**(y-1)) were weibull's 1-point and batch cost where SymPy's
gradient has one. pow_prev is p / x where p is a normal float: then the quotient is within
~1.5 ulp of the power (p's own pow rounding and the division's); elsewhere (p = 0, subnormal,
inf or nan: x = 0 or inf, negative x, x**y under- or overflowing while x**(y-1) does not) it is
the power itself, and only the taken side runs (the Numba lowering branches around the libm
call; lane code flags such points, `vecmath.vpowprevoff`, for the row kernel's steps). As a
function of three free arguments it is that piecewise function, and so are its partials:
through p = x**y the chain rule gives (y - 1) x**(y-2) and x**(y-1) log x on either side.
FIT: weibull@14's value_grad 28 -> 14 pow.

Partial rules use only `Node` methods, so this module imports no other symgraph module.
"""

from __future__ import annotations

import numpy as np

NORMAL = (2.2250738585072014e-308, 1.7976931348623157e308)  # the smallest normal, the largest
NORMAL_TEST = "abs({2}) >= 2.2250738585072014e-308 and {2} - {2} == 0.0"  # normal: finite too


def pow_prev(x, y, p):
    """The op's numeric meaning on NumPy values."""
    low, high = NORMAL
    with np.errstate(all="ignore"):
        size = np.abs(p)
        result = np.where((size >= low) & (size <= high), np.divide(p, x),
                          np.power(x, np.subtract(y, 1.0)))
    return result[()] if np.ndim(result) == 0 else result


def pow_prev_partials(args, out):
    x, y, p = args
    size = p.call("abs")
    normal = size.call("ge", NORMAL[0]).call("where", size.call("le", NORMAL[1]), 0.0)
    log_x = x.call("eq", 0.0).call("where", 0.0, x.call("log"))
    return (normal.call("where", -out / x, (y - 1.0) * x ** (y - 2.0)),
            normal.call("where", 0.0, out * log_x), normal.call("where", 1.0 / x, 0.0))


def pow_prev_sympy(sp, x, y, p):
    low, high = NORMAL
    return sp.Piecewise((p / x, (sp.Abs(p) >= low) & (sp.Abs(p) <= high)), (x ** (y - 1), True))
