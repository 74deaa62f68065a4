"""Python functions written with NumPy, traced on symbols, differentiated and compiled.

Oracles: NumPy itself (the function run on numbers gives the values; central differences of it
the derivatives), the same mathematics written by hand with symgraph's functions, and the two
backends against each other."""

from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from tests.numpy_workloads import CASES, Case

IDS = [c.name for c in CASES]


def numeric(f, *args) -> np.ndarray:
    """`f` run by NumPy on numbers (a constant node, from sg.erf of a number, is a number)."""
    result = f(*args)
    items = result if isinstance(result, (list, tuple, np.ndarray)) else [result]
    values = [float(r) for r in np.asarray(items, dtype=object).reshape(-1)]
    return np.array(values) if np.ndim(result) else np.array(values[0])


def finite_difference_jacobian(f, args: tuple, step: float = 1e-6) -> np.ndarray:
    """d f / d (every argument's elements, flattened in order): shape (outputs, inputs)."""
    flat = np.concatenate([np.ravel(a) for a in args])
    shapes = [np.shape(a) for a in args]

    def call(vector):
        pieces, start = [], 0
        for shape in shapes:
            size = int(np.prod(shape))
            piece = vector[start:start + size]
            pieces.append(float(piece[0]) if shape == () else piece.reshape(shape))
            start += size
        return numeric(f, *pieces).reshape(-1)

    columns = []
    for i in range(flat.size):
        h = step * max(1.0, abs(flat[i]))
        up, down = flat.copy(), flat.copy()
        up[i] += h
        down[i] -= h
        columns.append((call(up) - call(down)) / (2 * h))
    return np.stack(columns, axis=-1)


def test_at_least_twenty_numpy_written_functions():
    assert len(CASES) >= 20


@pytest.fixture(scope="module")
def compiled():
    return {c.name: sg.compile(c.f, example=c.example, backend="python") for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_traced_function_gives_numpys_values(case: Case, compiled):
    fn = compiled[case.name]
    rng = np.random.default_rng(7)
    for _ in range(3):
        args = case.sample(rng)
        got = fn(*args)
        np.testing.assert_allclose(np.asarray(got, dtype=float), numeric(case.f, *args),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_derivatives_match_finite_differences_of_the_numpy_function(case: Case, compiled):
    fn = compiled[case.name]
    args = case.sample(np.random.default_rng(11))
    expected = finite_difference_jacobian(case.f, args)
    flat = fn.compiled.jacobian(fn.flatten(*args))
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(flat, expected, rtol=1e-5, atol=1e-6 * scale)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_derivatives_match_the_hand_written_symgraph_form(case: Case, compiled):
    fn = compiled[case.name]
    hand = case.hand()
    by_hand = sg.compile(hand, fn.trace.symbols, backend="python")
    rng = np.random.default_rng(5)
    for _ in range(2):
        point = fn.flatten(*case.sample(rng))
        np.testing.assert_allclose(fn.compiled(point), by_hand(point), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(fn.compiled.jacobian(point), by_hand.jacobian(point),
                                   rtol=1e-10, atol=1e-10)
        if fn.trace.scalar:
            np.testing.assert_allclose(fn.compiled.hessian(point), by_hand.hessian(point),
                                       rtol=1e-9, atol=1e-9)


BOTH_BACKENDS = ["rosenbrock", "mlp_mse", "black_scholes", "softmax", "lennard_jones"]


@pytest.mark.parametrize("name", BOTH_BACKENDS)
def test_numba_and_python_backends_agree_on_traced_functions(name: str, compiled):
    case = next(c for c in CASES if c.name == name)
    numba_fn = sg.compile(case.f, example=case.example)
    python_fn = compiled[name]
    args = case.sample(np.random.default_rng(3))
    np.testing.assert_allclose(numba_fn(*args), python_fn(*args), rtol=1e-12)
    if python_fn.trace.scalar:
        value, grad = numba_fn.value_and_grad(*args)
        expected_value, expected_grad = python_fn.value_and_grad(*args)
        assert value == pytest.approx(expected_value, rel=1e-12)
        for a, b in zip(grad if isinstance(grad, tuple) else [grad],
                        expected_grad if isinstance(expected_grad, tuple) else [expected_grad]):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_allclose(numba_fn.jacobian(*args), python_fn.jacobian(*args),
                                   rtol=1e-10, atol=1e-12)
