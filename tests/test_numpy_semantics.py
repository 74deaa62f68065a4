"""Numbers follow NumPy in every backend and in constant folding; kernels never raise."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import symgraph as sg

x, y = sg.symbols("x y")

# (expression, point for x, y) -> NumPy's answer
EDGE_CASES = [
    (x / y, (1.0, 0.0)), (x / y, (-1.0, 0.0)), (x / y, (0.0, 0.0)),
    (sg.log(x), (0.0, 0.0)), (sg.log(x), (-1.0, 0.0)), (sg.sqrt(x), (-1.0, 0.0)),
    (sg.exp(x), (1000.0, 0.0)), (sg.exp(x), (-1000.0, 0.0)), (x**y, (0.0, -1.0)),
    (x**y, (-8.0, 1.0 / 3.0)), (x**y, (10.0, 400.0)), (sg.sin(x), (math.inf, 0.0)),
    (sg.acosh(x), (0.5, 0.0)), (sg.atanh(x), (1.0, 0.0)), (sg.asin(x), (2.0, 0.0)),
    (sg.log1p(x), (-1.0, 0.0)), (sg.log10(x), (-2.0, 0.0)), (sg.floor(x), (math.inf, 0.0)),
    (sg.floor(x), (math.nan, 0.0)), (sg.cosh(x), (1000.0, 0.0)), (sg.tan(x), (math.inf, 0.0)),
    (sg.max(x, y), (math.nan, 1.0)), (sg.max(x, y), (1.0, math.nan)),
    (sg.min(x, y), (1.0, math.nan)), (sg.relu(x), (math.nan, 0.0)), (sg.sign(x), (math.nan, 0.)),
    (sg.sigmoid(x), (-1000.0, 0.0)), (sg.softplus(x), (1000.0, 0.0)),
    (sg.erf(x), (math.inf, 0.0)), (sg.where(x, y, -y), (math.nan, 2.0)),
    (x**2, (1e200, 0.0)), (sg.hypot(x, y), (math.inf, math.nan)), (sg.cbrt(x), (-8.0, 0.0)),
    (sg.expm1(x), (1000.0, 0.0)), (x * 0, (math.inf, 0.0)), (x - x, (math.inf, 0.0)),
]


def _numpy_value(expr, point):
    return float(sg.evaluate(expr, {x: point[0], y: point[1]}))


@pytest.mark.parametrize("backend", ["python", "numba"])
@pytest.mark.parametrize("case", range(len(EDGE_CASES)))
def test_edge_point_value_and_gradient_follow_numpy(case, backend):
    expr, point = EDGE_CASES[case]
    fn = sg.compile(expr, [x, y], backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a kernel neither raises nor warns
        value, gradient = fn.value_and_grad(*point)
        batch_values, batch_grads = fn.value_and_grad(np.array([point, point]))
    expected = _numpy_value(expr, point)
    np.testing.assert_equal(value, expected)
    np.testing.assert_equal(batch_values, [expected, expected])
    np.testing.assert_equal(batch_grads[0], gradient)


def test_constant_folding_follows_numpy():
    assert (sg.const(1.0) / 0).value == math.inf
    assert math.isnan((sg.const(0.0) / 0).value)
    assert sg.log(0.0).value == -math.inf
    assert math.isnan(sg.log(-1.0).value) and math.isnan(sg.sqrt(-1.0).value)
    assert sg.exp(1000.0).value == math.inf
    assert (sg.const(10) ** 10**10).value == math.inf  # never exact integer arithmetic


def test_numpy_semantics_hold_for_parsed_text_too():
    assert sg.parse("1/0").value == math.inf
    assert math.isnan(sg.parse("log(-1)").value)
    assert sg.parse("10**10**10").value == math.inf
