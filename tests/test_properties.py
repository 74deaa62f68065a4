"""Hypothesis properties over random expressions drawn from the op table.

Oracles: SymPy's `diff` evaluated at 30 digits, central differences in a random direction, and
the two backends against each other.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading

import mpmath
import numpy as np
import sympy
from hypothesis import HealthCheck, assume, given, reject, settings
from hypothesis import strategies as st

import symgraph as sg
from symgraph.lower.programs import build_programs

from .strategies import SMOOTH_OPS, expressions, points

VARIABLES = sg.symbols("x y z")
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _at(point: dict[str, float]) -> dict:
    return {sg.symbol(k): v for k, v in point.items()}


def _numbers(nodes, point) -> np.ndarray:
    return np.array([float(sg.evaluate(n, _at(point))) for n in nodes])


@contextlib.contextmanager
def _oracle_time(seconds: float = 20.0):
    """SymPy's derivative within `seconds`, else the example is rejected: a drawn expression
    can make SymPy's diff and simplification run for many minutes (seen once: a Hessian
    entry, > 10 min), which says nothing about symgraph's answer."""
    main = threading.current_thread() is threading.main_thread()
    if not (hasattr(signal, "setitimer") and main):
        yield
        return

    def late(*_):
        raise _OracleTooSlow

    previous = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _OracleTooSlow:
        reject()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _OracleTooSlow(Exception):
    pass


def _sympy_value(expr: sympy.Expr, point: dict[str, float]) -> float:
    with mpmath.workdps(30):
        value = expr.evalf(30, subs={sympy.Symbol(k, real=True): v for k, v in point.items()})
    try:
        return float(value)
    except TypeError:  # complex or undefined: no oracle there
        return math.nan


@settings(max_examples=60, **SETTINGS)
@given(expressions(ops=SMOOTH_OPS, max_depth=3), points())
def test_gradient_agrees_with_sympy_diff_evaluated_numerically(expr, point):
    gradient = _numbers(sg.grad(expr, VARIABLES), point)
    reference = sg.to_sympy(expr)
    for variable, ours in zip(VARIABLES, gradient):
        with _oracle_time():
            theirs = _sympy_value(sympy.diff(reference, sympy.Symbol(variable.name,
                                                                     real=True)), point)
        if math.isfinite(theirs) and abs(theirs) < 1e12:
            assert math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-9), (variable, ours,
                                                                            theirs)


@settings(max_examples=80, **SETTINGS)
@given(expressions(ops=SMOOTH_OPS, max_depth=4), points(),
       st.lists(st.floats(-1, 1), min_size=3, max_size=3))
def test_gradient_agrees_with_central_differences_in_a_random_direction(expr, point, raw):
    direction = np.array(raw)
    assume(np.linalg.norm(direction) > 0.1)
    direction /= np.linalg.norm(direction)
    base = np.array([point[v.name] for v in VARIABLES])
    gradient = _numbers(sg.grad(expr, VARIABLES), point)

    def f(p):
        return float(sg.evaluate(expr, dict(zip(VARIABLES, p))))

    assume(np.all(np.isfinite(gradient)) and math.isfinite(f(base)))
    h = 1e-6
    estimates = [(f(base + s * direction) - f(base - s * direction)) / (2 * s) for s in (h, 2 * h)]
    assume(all(math.isfinite(e) for e in estimates))
    # Richardson's extrapolation from two step sizes cancels the h**2 error term.
    fd = (4 * estimates[0] - estimates[1]) / 3
    scale = max(1.0, abs(fd), float(np.abs(gradient).max()))
    assume(abs(estimates[0] - estimates[1]) < 1e-4 * scale)  # f is smooth enough here
    assert abs(gradient @ direction - fd) <= 1e-6 * scale


@settings(max_examples=25, **SETTINGS)
@given(expressions(ops=SMOOTH_OPS, max_depth=3), points())
def test_hessian_agrees_with_sympy(expr, point):
    ours = np.array([_numbers(row, point) for row in sg.hessian(expr, VARIABLES)])
    reference = sg.to_sympy(expr)
    names = [sympy.Symbol(v.name, real=True) for v in VARIABLES]
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            with _oracle_time():
                theirs = _sympy_value(sympy.diff(reference, a, b), point)
            if math.isfinite(theirs) and abs(theirs) < 1e12:
                assert math.isclose(ours[i, j], theirs, rel_tol=1e-9, abs_tol=1e-8)


@settings(max_examples=8, **SETTINGS)
@given(st.lists(expressions(max_depth=4), min_size=6, max_size=6),
       st.lists(points(), min_size=4, max_size=4))
def test_python_and_numba_kernels_agree_on_values_and_jacobians(exprs, pts):
    # Several expressions in one vector function: one Numba compile checks them all.
    kernels = [sg.compile(exprs, VARIABLES, backend=b) for b in ("python", "numba")]
    X = np.array([[p[v.name] for v in VARIABLES] for p in pts])
    reference = np.array([_numbers(exprs, p) for p in pts])
    for fn in kernels:
        np.testing.assert_allclose(fn(X), reference, rtol=1e-12, atol=1e-300)
    python, numba = kernels
    np.testing.assert_allclose(python.jacobian(X), numba.jacobian(X), rtol=1e-12, atol=1e-300)
    for row in X:
        np.testing.assert_allclose(python.jacobian(row), numba.jacobian(row), rtol=1e-12,
                                   atol=1e-300)


@settings(max_examples=40, **SETTINGS)
@given(expressions(max_depth=4))
def test_print_then_parse_gives_back_the_identical_node(expr):
    assert sg.parse(sg.to_text(expr, tidy=False)) is expr


# pow_prev is left out: the differentiator builds it only inside d/dx x**y (pow is drawn, so
# that use is here); given three free arguments its partials are its piecewise sides, each a
# full power and a log, many times its own cost (pow_prev of a shared argument: 52 against 10).
@settings(max_examples=60, **SETTINGS)
@given(expressions(max_depth=4, ops=[name for name in sorted(sg.OPS) if name != "pow_prev"]))
def test_fused_value_and_gradient_cost_is_at_most_4x_the_value_cost(expr):
    # Weighted by the op table's costs: erf' = c*exp(-x*x) is four cheap operations after one
    # transcendental, which a plain count would rate like erf itself.
    value, fused = build_programs([expr], VARIABLES, VARIABLES, scalar=True,
                                  with_hessian=False)
    assert fused.cost <= 4 * value.cost + len(VARIABLES)
