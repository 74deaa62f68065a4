"""symgraph.backends.numba.vecmath: accuracy against mpmath, NumPy's edge cases, vectorised
loops, the sin/cos fix-up beyond SIN_COS_LIMIT (sinh/cosh/asinh: their callers' beyond
HYPERBOLIC_LIMIT and ASINH_LIMIT)."""

from __future__ import annotations

import math
import re

import mpmath
import numpy as np
import pytest
from numba import njit

from symgraph.backends.numba import vecmath as vm

mpmath.mp.prec = 120
RNG_SEED = 20240601


def _loop(f):
    @njit(error_model="numpy")
    def run(x, out):
        for j in range(x.size):
            out[j] = f(x[j])
    return run


_LOOPS: dict[str, object] = {}


def apply(name: str, x) -> np.ndarray:
    """vecmath.<name> over x, inside a vectorisable loop (the way kernels use it)."""
    if name not in _LOOPS:
        _LOOPS[name] = _loop(getattr(vm, name))
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(x)
    _LOOPS[name](x, out)
    return out


def max_ulp(name: str, x: np.ndarray, exact) -> tuple[float, float]:
    """Largest |result - exact| in units of the last place of the exact value, and where."""
    y = apply(name, x)
    worst, where = 0.0, math.nan
    for xv, yv in zip(x.tolist(), y.tolist()):
        t = exact(mpmath.mpf(xv))
        if t == 0 or not mpmath.isfinite(t) or math.isinf(float(t)):
            continue
        e = math.frexp(abs(float(t)))[1]  # |t| in [2**(e-1), 2**e)
        ulp = max(2.0 ** (e - 53), 2.0 ** -1074)
        err = float(abs(mpmath.mpf(yv) - t) / ulp)  # in mpmath: the difference may be subnormal
        if err > worst:
            worst, where = err, xv
    return worst, where


def log_uniform(rng, lo: float, hi: float, n: int) -> np.ndarray:
    return np.exp(rng.uniform(math.log(lo), math.log(hi), n))


def signed(rng, x: np.ndarray) -> np.ndarray:
    return x * rng.choice([-1.0, 1.0], x.size)


# ---- accuracy ---------------------------------------------------------------------------------

def test_vexp_within_one_ulp_of_mpmath():
    rng = np.random.default_rng(RNG_SEED)
    x = np.concatenate([
        rng.uniform(-745.1, 709.78, 800), signed(rng, log_uniform(rng, 1e-300, 700, 600)),
        rng.uniform(-745.13, -708.0, 300),  # subnormal results
        rng.uniform(700.0, 709.78, 200), rng.uniform(-0.35, 0.35, 300)])
    err, where = max_ulp("vexp", x, mpmath.exp)
    assert err <= 0.85, (err, where)


def test_vlog_within_one_ulp_of_mpmath():
    rng = np.random.default_rng(RNG_SEED + 1)
    x = np.concatenate([
        log_uniform(rng, 1e-320, 1e308, 1000), rng.uniform(0.7, 1.5, 500),
        1.0 + rng.uniform(-1e-6, 1e-6, 300), log_uniform(rng, 5e-324, 2.2e-308, 300)])
    err, where = max_ulp("vlog", x, mpmath.log)
    assert err <= 0.85, (err, where)


@pytest.mark.parametrize("name,base", [("vlog2", 2), ("vlog10", 10)])
def test_vlog2_vlog10_within_six_tenths_of_an_ulp_and_exact_at_powers_of_their_base(name, base):
    rng = np.random.default_rng(RNG_SEED + 9)
    x = np.concatenate([
        log_uniform(rng, 1e-320, 1e308, 1500), rng.uniform(1.3, 1.45, 1500),  # m near sqrt(2)
        rng.uniform(0.68, 0.73, 500), 1.0 + rng.uniform(-1e-6, 1e-6, 300),
        log_uniform(rng, 5e-324, 2.2e-308, 300)])
    err, where = max_ulp(name, x, lambda v: mpmath.log(v, base))
    assert err <= 0.6, (err, where)
    exponents = np.arange(-1074, 1024) if base == 2 else np.arange(-300, 309)
    powers = np.array([float(mpmath.mpf(base) ** int(k)) for k in exponents])
    assert np.array_equal(apply(name, powers), exponents.astype(float))


def test_vatanh_within_one_ulp_of_mpmath_from_subnormals_to_one():
    rng = np.random.default_rng(RNG_SEED + 10)
    x = np.concatenate([
        signed(rng, log_uniform(rng, 1e-310, 0.99, 2000)), rng.uniform(-1.0, 1.0, 1000),
        signed(rng, 1.0 - log_uniform(rng, 1e-16, 0.01, 1000)),
        signed(rng, rng.uniform(0.0009, 0.0011, 500))])  # where the series hands over
    err, where = max_ulp("vatanh", x, mpmath.atanh)
    assert err <= 0.8, (err, where)


def _near_multiples_of_half_pi(rng, n: int) -> np.ndarray:
    ks = np.concatenate([np.arange(1, 100), rng.integers(100, 31_000_000, n)])
    # the doubles closest to k pi/2 in their binades (continued fractions of pi/2)
    ks = np.concatenate([ks, [29, 7424, 29327, 204551, 1081409, 9206271, 18412542]])
    x = np.array([float(mpmath.mpf(int(k)) * mpmath.pi / 2) for k in ks])
    x = np.concatenate([x, np.nextafter(x, 0.0), np.nextafter(x, np.inf)])
    return np.concatenate([x, -x])


@pytest.mark.parametrize("name,exact", [("vsin", mpmath.sin), ("vcos", mpmath.cos),
                                        ("vtan", mpmath.tan)])
def test_vsin_vcos_vtan_within_one_ulp_of_mpmath_up_to_the_limit(name, exact):
    rng = np.random.default_rng(RNG_SEED + 2)
    x = np.concatenate([
        signed(rng, log_uniform(rng, 1e-300, vm.SIN_COS_LIMIT, 1000)), rng.uniform(-10, 10, 500),
        _near_multiples_of_half_pi(rng, 150),
        vm.SIN_COS_LIMIT - rng.uniform(0, 1000, 100), [vm.SIN_COS_LIMIT, -vm.SIN_COS_LIMIT]])
    assert np.all(np.abs(x) <= vm.SIN_COS_LIMIT)
    err, where = max_ulp(name, x, exact)
    assert err <= 0.85, (err, where)


def test_vtanh_within_one_ulp_of_mpmath():
    rng = np.random.default_rng(RNG_SEED + 4)
    x = np.concatenate([
        signed(rng, log_uniform(rng, 1e-300, 30.0, 1000)), rng.uniform(-3, 3, 500),
        signed(rng, rng.uniform(17.0, 22.0, 200)), signed(rng, log_uniform(rng, 1e-10, 1e-3, 200))])
    err, where = max_ulp("vtanh", x, mpmath.tanh)
    assert err <= 0.85, (err, where)


def test_verf_within_one_ulp_of_mpmath():
    rng = np.random.default_rng(RNG_SEED + 5)
    x = np.concatenate([
        signed(rng, log_uniform(rng, 1e-300, 7.0, 800)), signed(rng, rng.uniform(0, 6.5, 800)),
        signed(rng, rng.uniform(0.45, 1.05, 300)), signed(rng, rng.uniform(1.9, 2.1, 200))])
    err, where = max_ulp("verf", x, mpmath.erf)
    assert err < 1.0, (err, where)


def test_vexpm1_within_one_ulp_of_mpmath():
    rng = np.random.default_rng(RNG_SEED + 6)
    x = np.concatenate([
        signed(rng, log_uniform(rng, 1e-300, 709.0, 1000)), rng.uniform(-40, 709.7, 400),
        rng.uniform(-1.1, 1.1, 400), rng.uniform(-45, -36, 100)])
    err, where = max_ulp("vexpm1", x, mpmath.expm1)
    assert err < 1.0, (err, where)


def test_vsigmoid_within_two_and_a_half_ulp_of_mpmath():
    # e / (1 + e) rounds e, 1 + e and the quotient (expit's form): 2.13 ulp at worst measured
    rng = np.random.default_rng(RNG_SEED + 11)
    x = np.concatenate([rng.normal(0.0, 3.0, 1500), rng.uniform(-745.0, 40.0, 1000),
                        signed(rng, log_uniform(rng, 1e-300, 1.0, 500))])
    err, where = max_ulp("vsigmoid", x, lambda v: 1 / (1 + mpmath.exp(-v)))
    assert err < 2.5, (err, where)


@pytest.mark.parametrize("name,exact,limit", [("vsinh", mpmath.sinh, vm.HYPERBOLIC_LIMIT),
                                              ("vcosh", mpmath.cosh, vm.HYPERBOLIC_LIMIT),
                                              ("vasinh", mpmath.asinh, vm.ASINH_LIMIT)])
def test_vsinh_vcosh_vasinh_within_one_ulp_of_mpmath_up_to_the_limit(name, exact, limit):
    rng = np.random.default_rng(RNG_SEED + 9)
    x = np.concatenate([
        signed(rng, log_uniform(rng, 1e-300, limit, 1000)),
        rng.uniform(-3, 3, 500), signed(rng, rng.uniform(0.3, 0.7, 500)),  # two pieces meet
        signed(rng, rng.uniform(0.9 * limit, limit, 100))])
    err, where = max_ulp(name, x, exact)
    assert err <= 0.8, (err, where)


def test_vlog1p_within_one_ulp_of_mpmath():
    rng = np.random.default_rng(RNG_SEED + 7)
    x = np.concatenate([
        signed(rng, log_uniform(rng, 1e-300, 1.0, 1000)), log_uniform(rng, 1e-300, 1e308, 400),
        -1.0 + log_uniform(rng, 1e-16, 0.5, 200), rng.uniform(-0.3, 0.5, 300)])
    err, where = max_ulp("vlog1p", x, mpmath.log1p)
    assert err <= 0.85, (err, where)


# ---- edge cases, compared with NumPy / libm --------------------------------------------------

EDGES = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300, -1e-300, 1e-20, 0.5, 1.0,
         -1.0, 2.0, 20.0, -20.0, 700.0, 709.78, 709.79, 710.0, -708.4, -745.13, -745.14, -746.0,
         1e300, -1e300, math.inf, -math.inf, math.nan, 1.7976931348623157e308]


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values, equal signs of zero, nan where nan."""
    return bool(np.all((a == b) & (np.signbit(a) == np.signbit(b)) | np.isnan(a) & np.isnan(b)))


@pytest.mark.parametrize("name,ref", [
    ("vexp", np.exp), ("vlog", np.log), ("vtanh", np.tanh), ("vexpm1", np.expm1),
    ("vlog1p", np.log1p), ("vlog2", np.log2), ("vlog10", np.log10), ("vatanh", np.arctanh),
    ("verf", np.vectorize(math.erf, otypes=[float])),
    ("vsigmoid", lambda v: np.exp(np.minimum(v, 0.0)) / (1.0 + np.exp(-np.abs(v))))])  # expit's
def test_edge_cases_give_numpys_answers(name, ref):
    x = np.array(EDGES + [-1.0 - 2.0 ** -52, 6.0, -6.0, 5.9, 19.1, -19.1, 1e-17, -1e-17, 0.5, 2.0])
    with np.errstate(all="ignore"):
        want = ref(x)
    got = apply(name, x)
    special = ~np.isfinite(want) | (want == 0.0)
    assert same(got[special], want[special]), (x[special], got[special], want[special])
    assert np.all(np.abs(got[~special] - want[~special]) <= np.spacing(np.abs(want[~special])))


def test_vexp_underflows_through_subnormals_to_zero():
    x = np.array([-708.0, -720.0, -740.0, -744.4, -745.13, -745.1332191019412, -745.14, -800.0])
    want = np.array([float(mpmath.exp(mpmath.mpf(v))) for v in x])  # correctly rounded
    assert same(apply("vexp", x), want)


def test_vlog_of_subnormals_is_correct():
    x = np.array([5e-324, 1e-320, 3e-310, 2.2250738585072009e-308])
    want = np.array([float(mpmath.log(mpmath.mpf(v))) for v in x])
    assert same(apply("vlog", x), want)


@pytest.mark.parametrize("name,ref", [("vsin", math.sin), ("vcos", math.cos), ("vtan", math.tan)])
def test_vsin_vcos_vtan_edges(name, ref):
    x = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-300, -1e-20, math.inf, -math.inf, math.nan])
    want = np.array([ref(v) if math.isfinite(v) else math.nan for v in x])
    assert same(apply(name, x), want)


@pytest.mark.parametrize("name,ref,limit", [("vsinh", np.sinh, vm.HYPERBOLIC_LIMIT),
                                            ("vcosh", np.cosh, vm.HYPERBOLIC_LIMIT),
                                            ("vasinh", np.arcsinh, vm.ASINH_LIMIT)])
def test_vsinh_vcosh_vasinh_edges_within_the_limit(name, ref, limit):
    x = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, -1e-20,
                  0.5, -0.5, 0.49999999999999994, limit, -limit, math.nan])
    want = ref(x)
    got = apply(name, x)
    exact = (want == 0.0) | np.isnan(want) | (np.abs(x) < 1e-8)  # zeros, tiny: sinh(x) = x
    assert same(got[exact], want[exact]), (x[exact], got[exact])
    assert np.all(np.abs(got[~exact] - want[~exact]) <= np.spacing(np.abs(want[~exact])))


# ---- sin/cos beyond the limit: the fix-up contract --------------------------------------------

@pytest.mark.parametrize("array_fn,ref", [(vm.vsin_array, math.sin), (vm.vcos_array, math.cos)])
def test_sin_cos_array_fix_up_matches_libm_for_huge_arguments(array_fn, ref):
    x = np.array([1e10, -1e10, 1e300, -1e300, 1.7976931348623157e308, 2.0 ** 60, 5.0000001e7,
                  math.inf, -math.inf, math.nan, 0.5, -3.0])
    out = np.empty_like(x)
    array_fn(x, out)
    want = np.array([ref(v) if math.isfinite(v) else math.nan for v in x])
    big = np.abs(x) > vm.SIN_COS_LIMIT
    assert same(out[big | np.isnan(x)], want[big | np.isnan(x)])  # bit-identical to libm
    assert np.allclose(out[~big & ~np.isnan(x)], want[~big & ~np.isnan(x)], rtol=1e-15)


# ---- vectorisation ----------------------------------------------------------------------------

def _host_has_avx2() -> bool:
    import llvmlite.binding as llvm
    return bool(llvm.get_host_cpu_features().get("avx2", False))


@pytest.mark.skipif(not _host_has_avx2(), reason="needs a CPU with AVX2")
@pytest.mark.parametrize("name", ["vexp", "vlog", "vsin", "vcos", "vtanh", "verf", "vexpm1",
                                  "vlog1p", "vsinh", "vcosh", "vasinh", "vsigmoid", "vlog2",
                                  "vlog10", "vatanh", "vtan", "vcbrt"])
def test_loop_over_function_compiles_to_packed_double_instructions(name):
    apply(name, np.linspace(0.1, 2.0, 64))
    run = _LOOPS[name]
    asm = run.inspect_asm(run.signatures[0])
    packed = re.findall(r"\bv(?:mul|add|sub)pd\s+[^\n]*%[yz]mm", asm)
    assert len(packed) >= 8, asm[:2000]
    assert not re.search(r"call[^\n]*(exp|log|sin|cos|tanh|erf|pow|cbrt)", asm)


def _sincos_loop(f):
    @njit(error_model="numpy")
    def run(x):
        out = np.empty(2 * x.size)
        for j in range(x.size):
            out[j], out[x.size + j] = f(x[j])
        return out
    return run


def test_vsincos_equals_vsin_and_vcos_bit_for_bit():
    rng = np.random.default_rng(RNG_SEED + 4)
    x = np.concatenate([signed(rng, log_uniform(rng, 1e-310, vm.SIN_COS_LIMIT, 4000)), EDGES])
    x = x[~(np.abs(x) > vm.SIN_COS_LIMIT)]
    both = _sincos_loop(vm.vsincos)(x)
    assert same(both[:x.size], apply("vsin", x)) and same(both[x.size:], apply("vcos", x))


@njit(error_model="numpy")
def _pow_loop(x, y, out, off):
    for j in range(x.size):
        out[j] = vm.vpow(x[j], y[j])
        off[j] = vm.vpowoff(x[j], y[j])


def test_vpow_within_one_ulp_of_mpmath_where_vpowoff_is_false_and_vectorises():
    rng = np.random.default_rng(RNG_SEED + 5)
    x = np.concatenate([log_uniform(rng, 1e-320, 1e308, 1500), rng.uniform(0.0, 5.0, 1500),
                        1.0 + rng.uniform(-1e-3, 1e-3, 500), [1.0, 2.0, 3.0, 0.5]])
    y = np.concatenate([rng.uniform(-1, 1, 1500) * vm.POW_LIMIT
                        / np.maximum(np.abs(np.log(x[:1500])), 1e-300),
                        rng.uniform(-20, 20, 1500), rng.uniform(-1e4, 1e4, 500),
                        [1e308, 0.0, -1.0, 2.5]])
    out, off = np.empty_like(x), np.empty(x.size, np.bool_)
    _pow_loop(x, y, out, off)
    assert off.sum() < x.size // 4 and not off[-3:].any()
    worst = 0.0
    for xv, yv, v in zip(x[~off].tolist(), y[~off].tolist(), out[~off].tolist()):
        t = mpmath.power(mpmath.mpf(xv), mpmath.mpf(yv))
        e = math.frexp(abs(float(t)))[1]
        worst = max(worst, float(abs(mpmath.mpf(v) - t) / max(2.0 ** (e - 53), 2.0 ** -1074)))
    assert worst <= 0.9, worst
    # the flag: outside its range (x <= 0, inf, nan; y not finite; |y log x| > POW_LIMIT)
    bad_x = np.array([0.0, -2.0, math.inf, math.nan, 2.0, 2.0, 2.0, 10.0])
    bad_y = np.array([1.0, 2.0, 1.0, 1.0, math.inf, math.nan, -math.inf, 7.0])
    _pow_loop(bad_x, bad_y, np.empty(8), flags := np.empty(8, np.bool_))
    assert flags.all()
    if _host_has_avx2():
        asm = _pow_loop.inspect_asm(_pow_loop.signatures[0])
        assert re.findall(r"\bv(?:mul|add|sub)pd\s+[^\n]*%[yz]mm", asm)
        assert not re.search(r"call[^\n]*(pow|exp|log)", asm)


@njit(error_model="numpy")
def _hypot_loop(x, y, out):
    for j in range(x.size):
        out[j] = vm.vhypot(x[j], y[j])


def test_vhypot_within_one_ulp_of_mpmath_with_numpys_edges():
    rng = np.random.default_rng(RNG_SEED + 6)
    x = signed(rng, np.concatenate([log_uniform(rng, 1e-320, 1e308, 1500),
                                    rng.uniform(0.0, 3.0, 500)]))
    with np.errstate(over="ignore"):  # some y overflow to inf: hypot is inf there
        y = np.concatenate([x[:1000] * log_uniform(rng, 1e-17, 1e17, 1000),
                            signed(rng, log_uniform(rng, 1e-320, 1e300, 1000))])
    out = np.empty_like(x)
    _hypot_loop(x, y, out)
    worst = 0.0
    for a, b, v in zip(x.tolist(), y.tolist(), out.tolist()):
        t = mpmath.sqrt(mpmath.mpf(a) ** 2 + mpmath.mpf(b) ** 2)
        if math.isinf(float(t)):
            assert v == math.inf
            continue
        e = math.frexp(float(t))[1]
        worst = max(worst, float(abs(mpmath.mpf(v) - t) / max(2.0 ** (e - 53), 2.0 ** -1074)))
    assert worst <= 0.6, worst
    a, b = (g.ravel() for g in np.meshgrid(EDGES, EDGES))
    out = np.empty_like(a)
    _hypot_loop(a, b, out)
    with np.errstate(over="ignore"):
        assert same(out, np.hypot(a, b))


@njit(error_model="numpy")
def _atan2_loop(y, x, out, off):
    for j in range(x.size):
        out[j] = vm.vatan2(y[j], x[j])
        off[j] = vm.vatan2off(y[j], x[j])


def test_vatan_and_vatan2_within_one_ulp_of_mpmath():
    rng = np.random.default_rng(RNG_SEED + 7)
    x = np.concatenate([signed(rng, log_uniform(rng, 1e-320, 1e308, 1000)),
                        rng.uniform(-4.0, 4.0, 1500), EDGES])
    err, where = max_ulp("vatan", x, mpmath.atan)
    assert err <= 0.8, (err, where)
    assert same(apply("vatan", EDGES), np.arctan(EDGES))
    y = np.concatenate([rng.normal(0.0, 2.0, 1500), signed(rng, log_uniform(rng, 1e-300, 1e300,
                                                                              1000))])
    x = np.concatenate([rng.normal(0.0, 2.0, 1500), signed(rng, log_uniform(rng, 1e-300, 1e300,
                                                                              1000))])
    out, off = np.empty_like(x), np.empty(x.size, np.bool_)
    _atan2_loop(y, x, out, off)
    assert not off.any()
    worst = 0.0
    for b, a, v in zip(y.tolist(), x.tolist(), out.tolist()):
        t = mpmath.atan2(mpmath.mpf(b), mpmath.mpf(a))
        e = math.frexp(abs(float(t)))[1]
        worst = max(worst, float(abs(mpmath.mpf(v) - t) / max(2.0 ** (e - 53), 2.0 ** -1074)))
    assert worst <= 0.9, worst
    b, a = (g.ravel() for g in np.meshgrid(EDGES, EDGES))  # zeros, inf, nan: flagged
    _atan2_loop(b, a, np.empty_like(a), off := np.empty(a.size, np.bool_))
    assert np.array_equal(off, (a == 0) | (b == 0) | ~np.isfinite(a) | ~np.isfinite(b))


@njit(error_model="numpy")
def _xlogy_loop(x, y, out):
    for j in range(x.size):
        out[j] = vm.vxlogy(x[j], y[j])


def test_vxlogy_within_one_and_a_half_ulp_of_mpmath_with_scipys_edges():
    from symgraph.ir.special import xlogy

    rng = np.random.default_rng(RNG_SEED + 11)
    x = signed(rng, np.concatenate([log_uniform(rng, 1e-300, 1e300, 1500),
                                    rng.uniform(0.0, 3.0, 500)]))
    y = np.concatenate([log_uniform(rng, 1e-320, 1e308, 1500), rng.uniform(0.5, 2.0, 500)])
    out = np.empty_like(x)
    _xlogy_loop(x, y, out)
    worst = 0.0
    for a, b, v in zip(x.tolist(), y.tolist(), out.tolist()):
        t = mpmath.mpf(a) * mpmath.log(mpmath.mpf(b))
        if t == 0 or math.isinf(float(t)):
            continue
        e = math.frexp(abs(float(t)))[1]
        worst = max(worst, float(abs(mpmath.mpf(v) - t) / max(2.0 ** (e - 53), 2.0 ** -1074)))
    assert worst <= 1.5, worst
    a, b = (g.ravel() for g in np.meshgrid(EDGES, EDGES))
    out = np.empty_like(a)
    _xlogy_loop(a, b, out)
    with np.errstate(all="ignore"):
        want = np.array([xlogy(p, q) for p, q in zip(a.tolist(), b.tolist())])
    special = ~np.isfinite(want) | (want == 0.0)
    assert same(out[special], want[special])


def _cube_root_points() -> np.ndarray:
    """Every exponent from subnormal to the largest double, both signs, perfect cubes, edges."""
    rng = np.random.default_rng(RNG_SEED)
    x = signed(rng, rng.uniform(1.0, 2.0, 60_000) * 2.0 ** rng.integers(-1074, 1024, 60_000))
    cubes = np.arange(1.0, 3000.0) ** 3
    return np.concatenate([x, rng.uniform(-10.0, 10.0, 20_000), cubes, -cubes, EDGES,
                           [5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                            2.0 ** -600, 2.0 ** 900, np.nextafter(2.0 ** 900, np.inf)]])


def test_vcbrt_and_the_numpy_form_give_cuberoot_cbrts_correctly_rounded_bits():
    from symgraph.ir.cuberoot import cbrt, cbrt_array

    x = _cube_root_points()
    want = np.array([cbrt(v) for v in x.tolist()])
    assert same(apply("vcbrt", x), want)
    assert same(cbrt_array(x), want)
    assert apply("vcbrt", np.array([27.0, -3375.0])).tolist() == [3.0, -15.0]
