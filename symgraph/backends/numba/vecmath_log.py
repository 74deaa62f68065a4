"""vecmath's logarithm kernels (`_log_kernel`, `_log_dd`) and the constants its exp shares,
in a module of their own so that `vecmath_gamma` uses them without importing vecmath (which
imports vecmath_gamma on first use). The rules are vecmath's (see its docstring)."""

from __future__ import annotations

import math

from .deferred import jit as _jit
from .runtime.bits import _bits, _float, _fma, _mul_error, _where

# Adding 1.5 * 2**52 rounds |y| < 2**51 to an integer held in the low bits of the sum: avoids
# float<->int64 conversions, which AVX2 lacks as vector instructions.
_ROUNDER = 6755399441055744.0
_ROUNDER_BITS = 0x4338000000000000
_LN2_HI = 0.6931471805598903  # ln 2 to 42 bits: n * _LN2_HI is exact for |n| < 2**11
_LN2_LO = 5.497923018708371e-14  # ln 2 - _LN2_HI


_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD


@_jit(error_model="numpy", forceinline=True)
def _log_reduce(x):
    """(dk, f) with x = 2**dk (1 + f), 1 + f in [sqrt(1/2), sqrt(2)): log's argument reduction
    (subnormals scaled by 2**52 first), shared by `_log_kernel` and `_log_dd`."""
    sub = x < 2.2250738585072014e-308
    xs = _where(sub, x * 4503599627370496.0, x)
    ix = _bits(xs)
    e = (ix - _SQRT_HALF_BITS) >> 52
    m = _float(ix - (e << 52))
    dk = _float(e + _ROUNDER_BITS) - _ROUNDER  # float(e) without a conversion instruction
    return _where(sub, dk - 52.0, dk), m - 1.0


@_jit(error_model="numpy", forceinline=True)
def _log_series(z):
    """z R(z), fdlibm's degree-7 remainder of log m = 2 atanh(s) in z = s**2."""
    r = 0.14616451042434167
    r = _fma(r, z, 0.15331721490738642)
    r = _fma(r, z, 0.18182889128565508)
    r = _fma(r, z, 0.22222211134749734)
    r = _fma(r, z, 0.28571428625975764)
    r = _fma(r, z, 0.39999999999899505)
    r = _fma(r, z, 0.666666666666667)
    return r * z


@_jit(error_model="numpy", forceinline=True)
def _log_kernel(x, corr):
    """log(x) + corr for a tiny correction `corr` (added before the final rounding). x = 2**e m,
    m in [sqrt(1/2), sqrt(2)); with f = m - 1 and s = f/(2+f),
    log m = 2 atanh(s) = f - f^2/2 + s (f^2/2 + R(s^2)), R of degree 7 (fdlibm's scheme)."""
    dk, f = _log_reduce(x)
    s = f / (2.0 + f)
    z = s * s
    r = _log_series(z)
    hfsq = 0.5 * f * f
    y = dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + (dk * _LN2_LO + corr))) - f)
    y = _where(x < math.inf, y, x)  # inf, nan
    y = _where(x == 0.0, -math.inf, y)
    return _where(x < 0.0, math.nan, y)


@_jit(error_model="numpy", forceinline=True)
def _log_m_dd(f):
    """log(1 + f) = lh + ll for 1 + f in [sqrt(1/2), sqrt(2)) (`_log_reduce`'s f): s = f/(2+f)
    as a double-double (an exact product, `_mul_error`), log m = 2s + s R(s^2) with lh = 2s."""
    d = 2.0 + f
    d_lo = (2.0 - d) + f  # exact: 2 + f = d + d_lo
    s = f / d
    # (f - p) - p_err rounds f - s d once, as _fma(-s, d, f) would, to the same bits; yet
    # beta_binomial@21's lane kernel took 300 ns a point with the fused one, 260 with this
    p = s * d
    p_err = _mul_error(s, d, p)  # s d = p + p_err exactly
    s_lo = (((f - p) - p_err) - s * d_lo) / d  # f / (d + d_lo) = s + s_lo
    return 2.0 * s, s * _log_series(s * s) + 2.0 * s_lo


@_jit(error_model="numpy", forceinline=True)
def _log_dd(x):
    """log(x) = hi + lo for finite x > 0, to ~2**-59 relative: `_log_kernel`'s reduction and
    log m (`_log_m_dd`) added to dk ln2 in double-double."""
    dk, f = _log_reduce(x)
    b, ll = _log_m_dd(f)
    a = dk * _LN2_HI  # exact
    hi = a + b
    v = hi - a
    err = (a - (hi - v)) + (b - v)  # TwoSum
    lo = err + (ll + dk * _LN2_LO)
    y = hi + lo
    return y, (hi - y) + lo


# 1/ln 2 and 1/ln 10 as double-doubles; log10(2) to 42 bits (dk * _LOG10_2_HI is exact for
# |dk| < 2**11) and its rest.
_INV_LN2_HI, _INV_LN2_LO = 1.4426950408889634, 2.0355273740931033e-17
_INV_LN10_HI, _INV_LN10_LO = 0.4342944819032518, 1.098319650216765e-17
_LOG10_2_HI, _LOG10_2_LO = 0.30102999566395283, 2.8363394551044964e-14


@_jit(error_model="numpy", forceinline=True)
def _log_base(x, inv_hi, inv_lo, k_hi, k_lo):
    """log(x) / log(b) for 1/log(b) = inv_hi + inv_lo and log_b(2) = k_hi + k_lo (k_hi times
    any exponent exact): dk log_b(2) + log(m) / log(b), log m = 2s + s R(s^2) carried as a
    double-double (`_log_m_dd`) through the product, so the one rounding that matters
    is the last. A power of two gives its exponent exactly (m = 1: log m = 0)."""
    dk, f = _log_reduce(x)
    lh, ll = _log_m_dd(f)
    ph = lh * inv_hi
    pl = _mul_error(lh, inv_hi, ph) + (lh * inv_lo + ll * inv_hi)
    a = dk * k_hi  # exact
    hi = a + ph
    v = hi - a
    lo = ((a - (hi - v)) + (ph - v)) + (pl + dk * k_lo)  # TwoSum's error, then the rest
    y = hi + lo
    y = _where(x < math.inf, y, x)  # inf, nan
    y = _where(x == 0.0, -math.inf, y)
    return _where(x < 0.0, math.nan, y)


@_jit(error_model="numpy", forceinline=True)
def vlog2(x: float) -> float:
    """log2(x), by `_log_base`: exact at powers of two. Max error 0.58 ulp (160,000 points vs
    mpmath, the worst near m = sqrt(2))."""
    return _log_base(x, _INV_LN2_HI, _INV_LN2_LO, 1.0, 0.0)


@_jit(error_model="numpy", forceinline=True)
def vlog10(x: float) -> float:
    """log10(x), by `_log_base`: exact at powers of ten. Max error 0.56 ulp (160,000 points vs
    mpmath)."""
    return _log_base(x, _INV_LN10_HI, _INV_LN10_LO, _LOG10_2_HI, _LOG10_2_LO)


@_jit(error_model="numpy", forceinline=True)
def vatanh(x: float) -> float:
    """atanh(x) = log((1 + a) / (1 - a)) / 2 for a = |x|: the quotient q as q + q_lo (the sum
    and difference with their exact errors, the division's by a fused multiply-add), then
    log(q) + q_lo/q by `_log_kernel`; below a = 2**-10 the odd series to a^7. Max error 0.75
    ulp (48,000 points vs mpmath, 1e-310 to 1 - 1e-16); +-inf at +-1, nan beyond."""
    a = abs(x)
    n = 1.0 + a
    n_lo = (1.0 - n) + a  # exact (|a| <= 1 where it matters)
    d = 1.0 - a
    d_lo = (1.0 - d) - a
    q = n / d
    q_lo = ((_fma(-q, d, n) + n_lo) - q * d_lo) / d  # (the rounding of n - q d)
    y = 0.5 * _log_kernel(q, q_lo / q)
    z = a * a  # below 2**-10: a + a^3/3 + a^5/5 + a^7/7 (the next term is below 2**-80 a)
    y = _where(a < 0.0009765625, a + a * (z * _fma(_fma(z, 0.14285714285714285, 0.2), z,
                                                   0.3333333333333333)), y)
    return _where(x == 0.0, x, _where(x < 0.0, -y, y))  # keeps -0.0


@_jit(error_model="numpy", forceinline=True)
def vxlogy(x: float, y: float) -> float:
    """x * log(y), 0 where x is 0 and y is not nan (SciPy's xlogy, symgraph.ir.special's), with
    log(y) exactly as `vlog` computes it: xlogy's derivative in x is log(y) (vlog in lane code),
    so after inlining LLVM computes one log for both, as vsigmoid shares softplus's exp
    (kl_divergence@12, batch v+g on one core: 1.41x -> 2.13x SymEngine's; x times `_log_dd`'s
    double-double, 0.55 ulp, took its own log). Max error 1.42 ulp (30,000 points vs mpmath);
    SciPy's x * log(y) rounds twice too."""
    return _where(x == 0.0 and y == y, 0.0, x * _log_kernel(y, 0.0))
