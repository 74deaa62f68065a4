"""Differential test of every op's kernels: Numba rows, the tape, Numba batches, the Python
backend and NumPy (the op table's `evaluate`), at edge points and random ones.

The op list is the op table's, so a new op is covered without an edit here. One Numba kernel
computes every op at once (a vector of outputs), to keep compiles few. What must hold is what
the README promises: Numba's row kernels and the Python backend's agree bit for bit; Numba's
batches and the tape agree with the rows bit for bit except in vecmath's functions (within 2
ulp: each is within ~1 of the truth; special values identical); NumPy agrees in special values
and within a few ulp (its AVX-512 routines are not libm's).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import symgraph as sg
from symgraph.ir.node import apply
from symgraph.ir.ops import OPS, is_builtin

X, Y, Z = sg.symbols("x y z")
OPS_ = sorted(name for name in OPS if is_builtin(name))
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, 27.0, -27.0, 3375.0, 1e-300, -1e-300,
         5e-324, -5e-324, 2.2250738585072014e-308, 1e300, -1e300, 1.7976931348623157e308,
         -1.7976931348623157e308, 709.78, 710.0, -745.2, 20.0, -20.0, math.pi / 2, 1e8, 0.1,
         math.inf, -math.inf, math.nan]


def _call(name: str) -> sg.Node:
    arity = OPS[name].arity
    args = (X,) if arity == 1 else (X, Y) if arity in (2, -1) else (X, Y, Z)[:arity]
    return apply(name, *args)


OUTPUTS = [_call(name) for name in OPS_]


def _points() -> np.ndarray:
    rng = np.random.default_rng(21)
    edges = np.array(EDGES)
    pairs = np.array([(a, b, c) for a in edges[::2] for b in edges[1::3] for c in (1.0, 0.0)])
    wide = np.exp(rng.uniform(-745, 709, (400, 3))) * rng.choice([-1.0, 1.0], (400, 3))
    near = rng.uniform(-4.0, 4.0, (1200, 3))
    unit = rng.uniform(-1.0, 1.0, (400, 3))
    cubes = np.column_stack([np.arange(1.0, 201.0) ** 3, np.arange(1.0, 201.0), np.ones(200)])
    alone = np.column_stack([edges, edges[::-1], np.zeros(len(edges))])
    return np.ascontiguousarray(np.concatenate([alone, pairs, wide, near, unit, cubes]))


POINTS = _points()


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bit for bit (any nan matches any nan)."""
    return (a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b))


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Doubles between a and b (huge across signs), in exact integers."""
    def ordered(v):
        bits = v.view(np.int64)
        return np.where(bits < 0, np.int64(-(2**63)) - bits, bits)

    same_sign = np.signbit(a) == np.signbit(b)
    return np.where(same_sign, np.abs(ordered(a) - np.where(same_sign, ordered(b), 0)), 2**62)


def _table(row, points: np.ndarray, width: int = len(OUTPUTS)) -> np.ndarray:
    out = np.empty((len(points), width))
    for k, p in enumerate(points):
        row(np.ascontiguousarray(p), out[k])
    return out


@pytest.fixture(scope="module")
def results():
    numba_fn = sg.compile(OUTPUTS, [X, Y, Z], wrt=[], strategy="straight")
    tape_fn = sg.compile(OUTPUTS, [X, Y, Z], wrt=[], strategy="tape")
    # The Python backend per op: where math raises, its row recomputes the whole point with
    # NumPy (whose AVX-512 exp, sinh... differ from libm), so one op's domain error must not
    # reach the others' numbers here.
    pythons = [sg.compile(o, [X, Y, Z], wrt=[], backend="python").kernels("value")[0]
               for o in OUTPUTS]
    with np.errstate(all="ignore"):
        numpy = np.column_stack([
            np.asarray(OPS[name].evaluate(*[POINTS[:, i] for i in range(
                2 if OPS[name].arity < 0 else OPS[name].arity)]), dtype=np.float64)
            for name in OPS_])
    return {"numba": _table(numba_fn.kernels("value")[0], POINTS),
            "tape": np.array([tape_fn(p) for p in POINTS]),
            "python": np.column_stack([_table(row, POINTS, 1)[:, 0] for row in pythons]),
            "numba batch": numba_fn(POINTS), "numpy": numpy}


# Ops whose numbers build on math.gamma / math.lgamma (CPython's own algorithm in the Python
# backend, libm's in Numba's kernels) or on lgamma / digamma of a positive x (vecmath_gamma's
# in Numba's kernels, the same algorithm in Dekker's products in the Python backend, within an
# ulp): one point differs in the last bits (and more where beta's exp of a sum magnifies
# that). Both backends give the same special values; each one's accuracy against mpmath is
# tests/test_special.py's.
GAMMA_BASED = {"gamma", "lgamma", "digamma", "beta", "lbeta", "polygamma"}


def _report(name: str, points: np.ndarray, a: np.ndarray, b: np.ndarray) -> str:
    return f"{name}: {len(points)} point(s) differ, e.g. at {points[0]}: {a[0]!r} vs {b[0]!r}"


def test_every_ops_numba_row_kernel_equals_the_python_backends_bit_for_bit(results):
    bad = []
    for k, name in enumerate(OPS_):
        mask = ~_same(results["numba"][:, k], results["python"][:, k])
        if name in GAMMA_BASED:  # special values the same; finite ones may differ (see above)
            mask &= ~(np.isfinite(results["numba"][:, k]) & np.isfinite(results["python"][:, k]))
        if mask.any():
            bad.append(_report(name, POINTS[mask], results["numba"][mask, k],
                               results["python"][mask, k]))
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("kernel", ["numba batch", "tape"])
def test_every_ops_batch_and_tape_equal_the_rows_but_vecmath_within_two_ulp(results, kernel):
    rows, batch = results["numba"], results[kernel]
    bad = []
    for k, name in enumerate(OPS_):
        same = _same(batch[:, k], rows[:, k])
        if OPS[name].lanes is not None:  # vecmath and libm each within ~1 ulp of the truth
            special = ~np.isfinite(rows[:, k]) | (rows[:, k] == 0.0)  # (glibc's tanh: 2)
            same |= ~special & (_ulps(batch[:, k], rows[:, k]) <= 2)
        if not same.all():
            bad.append(_report(name, POINTS[~same], batch[~same, k], rows[~same, k]))
    assert not bad, "\n".join(bad)


def test_every_op_agrees_with_numpy_in_special_values_and_within_four_ulp(results):
    ours, numpy = results["python"], results["numpy"]
    bad = []
    for k, name in enumerate(OPS_):
        a, b = ours[:, k], numpy[:, k]
        same = _same(a, b)
        if name in ("min", "max"):  # NumPy's SIMD loops return the second of a tie of zeros
            same |= (a == 0.0) & (b == 0.0)
        close = np.isfinite(a) & np.isfinite(b) & (a != 0.0) & (b != 0.0) & (_ulps(a, b) <= 4)
        ok = same | close
        if not ok.all():
            bad.append(_report(name, POINTS[~ok], a[~ok], b[~ok]))
    assert not bad, "\n".join(bad)


def test_cbrt_of_perfect_cubes_is_exact_in_every_kernel(results):
    k = OPS_.index("cbrt")
    with np.errstate(all="ignore"):
        cubes = POINTS[:, 0] == np.round(np.cbrt(POINTS[:, 0])) ** 3
    cubes &= np.isfinite(POINTS[:, 0]) & (np.abs(POINTS[:, 0]) < 2.0**53)
    for kernel in ("numba", "tape", "python", "numba batch"):
        roots = results[kernel][cubes, k]
        assert np.array_equal(np.round(roots), roots) and np.array_equal(
            roots * roots * roots, POINTS[cubes, 0]), kernel


def test_numbas_cbrt_at_27_and_floor_of_cbrt_3375_are_exact():
    f = sg.compile("floor(cbrt(x)) + 0 * y", ["x", "y"], wrt=[], strategy="straight")
    assert f(3375.0, 1.0) == 15.0
    g = sg.compile("cbrt(x)", ["x"], strategy="straight")
    value, gradient = g.value_and_grad(27.0)
    assert value == 3.0 and gradient[0] == 1.0 / 27.0


# -- item 6: the raw kernels from fn.kernels() check their arguments ---------------------------

@pytest.fixture(scope="module")
def raw_kernels():
    fn = sg.compile(X * Y + sg.sin(X), [X, Y], strategy="straight")
    return fn.kernels("value_grad")


def test_raw_numba_row_kernel_refuses_short_out_short_x_and_read_only_out(raw_kernels):
    row, _ = raw_kernels
    x, out = np.array([1.0, 2.0]), np.empty(3)
    row(x, out)
    assert out[0] == 2.0 + math.sin(1.0)
    guard = np.full(8, 7.0)  # a short out inside a bigger buffer: nothing past it is touched
    with pytest.raises(ValueError, match="out must be"):
        row(x, guard[:2])
    assert (guard == 7.0).all()
    with pytest.raises(ValueError, match="x must be"):
        row(np.array([1.0]), out)
    read_only = np.empty(3)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        row(x, read_only)


def test_raw_numba_batch_kernel_refuses_wrong_shapes_and_read_only_out(raw_kernels):
    _, batch = raw_kernels
    X_ = np.ones((4, 2))
    with pytest.raises(ValueError, match="OUT must be"):
        batch(X_, np.empty((3, 3)))
    with pytest.raises(ValueError, match="X must be"):
        batch(np.ones((4, 1)), np.empty((4, 3)))
    read_only = np.empty((4, 3))
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        batch(X_, read_only)
    out = np.empty((4, 3))
    batch(X_, out)
    assert np.allclose(out[:, 0], 1.0 + math.sin(1.0))
