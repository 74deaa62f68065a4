"""from_sympy / to_sympy: mapping, round trips, sharing, linear work, depth, errors."""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings

import symgraph.frontends.sympy_bridge as bridge
from symgraph.frontends.sympy_bridge import from_sympy, from_sympy_matrix, to_sympy
from symgraph.ir.evaluate import count_ops, evaluate
from symgraph.ir.node import apply, symbol
from symgraph.ir.traversal import topological_order

from .strategies import expressions, points

x, y, z = sp.symbols("x y z", real=True)
X, Y, Z = symbol("x"), symbol("y"), symbol("z")
POINTS = [{"x": 0.7, "y": -1.3, "z": 2.1}, {"x": -2.4, "y": 0.6, "z": -0.2},
          {"x": 1.9, "y": 1.1, "z": 0.0}]


def sympy_value(expr, at: dict) -> float:
    value = expr.subs({sp.Symbol(k, real=True): sp.Float(v) for k, v in at.items()})
    if value is sp.S.true or value is sp.S.false:
        return float(value is sp.S.true)
    if value is sp.S.NaN or value is sp.S.ComplexInfinity:
        return math.nan
    number = complex(sp.N(value, 30))
    return number.real if number.imag == 0 else math.nan  # numpy: nan off the real line


def agree(a: float, b: float, rel: float = 1e-9) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def ops_of(node) -> list[str]:
    return [n.op for n in topological_order([node])]


@contextmanager
def recursion_limit(limit: int):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


# -- round trips ------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(expressions(), points())
def test_round_trip_keeps_values(expr, at):
    back = from_sympy(to_sympy(expr))
    before, after = float(evaluate(expr, at)), float(evaluate(back, at))
    if math.isfinite(before):  # SymPy may legitimately simplify away an overflow
        assert agree(before, after, 1e-8), (before, after)


@settings(max_examples=25, deadline=None)
@given(expressions(max_depth=3), points())
def test_to_sympy_has_the_same_value(expr, at):
    before = float(evaluate(expr, at))
    if math.isfinite(before):
        assert agree(before, sympy_value(to_sympy(expr), at), 1e-8)


def test_round_trip_of_symgraph_forms_is_exact():
    for node in [X / Y, apply("sqrt", X), apply("cbrt", X), apply("relu", X), X**2.5,
                 apply("where", X < Y, X, Y), apply("max", X, Y), apply("atan2", X, Y),
                 apply("erfc", X * Y), apply("floor", X) + apply("ceil", Y), -X]:
        assert from_sympy(to_sympy(node)) is node


# -- SymPy -> symgraph ----------------------------------------------------------------------

FUNCTIONS = [
    (sp.exp(x), "exp"), (sp.log(x), "log"), (sp.log(x, 2, evaluate=False), "log2"),
    (sp.log(x, 10, evaluate=False), "log10"), (sp.sin(x), "sin"), (sp.cos(x), "cos"),
    (sp.tan(x), "tan"), (sp.asin(x), "asin"), (sp.acos(x), "acos"), (sp.atan(x), "atan"),
    (sp.sinh(x), "sinh"), (sp.cosh(x), "cosh"), (sp.tanh(x), "tanh"), (sp.asinh(x), "asinh"),
    (sp.acosh(x), "acosh"), (sp.atanh(x), "atanh"), (sp.Abs(x), "abs"), (sp.sign(x), "sign"),
    (sp.floor(x), "floor"), (sp.ceiling(x), "ceil"), (sp.erf(x), "erf"), (sp.erfc(x), "erfc"),
    (sp.atan2(x, y), "atan2"), (sp.Min(x, y), "min"), (sp.Max(x, y), "max"),
    (sp.Max(0, x), "relu"), (sp.sqrt(x), "sqrt"), (sp.real_root(x, 3), "cbrt"),
    (x**y, "pow"), (x < y, "lt"), (x <= y, "le"), (x > y, "gt"), (x >= y, "ge"),
    (sp.Eq(x, y), "eq"), (sp.Ne(x, y), "ne"), (sp.cot(x), "div"), (x + y + z, "add"),
    (x * y * z, "mul"),
]


@pytest.mark.parametrize("expr, op", FUNCTIONS, ids=[op for _, op in FUNCTIONS])
def test_function_mapping(expr, op):
    node = from_sympy(expr)
    assert node.op == op
    for at in [{"x": 0.45, "y": 1.7, "z": -0.8}, {"x": 0.9, "y": 0.3, "z": 2.0}]:
        if op == "acosh":
            at = {**at, "x": at["x"] + 1.0}
        assert agree(float(evaluate(node, at)), sympy_value(expr, at))


def test_add_and_mul_are_single_nary_nodes():
    assert from_sympy(x + y + z + 1).args.__len__() == 4
    assert len(from_sympy(2 * x * y * z).args) == 4


def test_min_max_fold_pairwise():
    node = from_sympy(sp.Max(x, y, z))
    assert ops_of(node).count("max") == 2
    for at in POINTS:
        assert float(evaluate(node, at)) == max(at.values())


@pytest.mark.parametrize("expr, numerator, denominator", [
    (x / y, X, Y), (x * y**-2, X, Y**2.0), (1 / x, 1.0, X), (1 / (x * y), 1.0, X * Y),
    (-x / 3, -X, 3.0), (2 * x / 3, 2.0 * X, 3.0), (1 / sp.sqrt(x), 1.0, apply("sqrt", X)),
    (x**sp.Rational(-3, 2), 1.0, X**1.5), ((x + 1) / (y * z), X + 1.0, Y * Z),
])
def test_division(expr, numerator, denominator):
    node = from_sympy(expr)
    assert node.op == "div"
    assert node.args == (apply("add", numerator), apply("add", denominator))


def test_powers():
    assert from_sympy(sp.sqrt(x)) is apply("sqrt", X)
    assert from_sympy(x**2) is X**2.0
    assert from_sympy(x**sp.Rational(3, 2)) is X**1.5
    assert from_sympy(x**-1.5) is X**-1.5  # a Float exponent stays a power
    assert from_sympy(sp.Pow(sp.E, x, evaluate=False)) is apply("exp", X)


def test_numbers():
    big = sp.Integer(10) ** 400
    cases = [(big, math.inf), (-big, -math.inf), (sp.Rational(1, 3), 1 / 3),
             (sp.Rational(big, 3), math.inf), (sp.Float("2.5"), 2.5), (sp.Float("1e400"), math.inf),
             (sp.pi, math.pi), (sp.E, math.e), (sp.oo, math.inf), (-sp.oo, -math.inf),
             (sp.nan, math.nan), (sp.zoo, math.nan), (sp.S.true, 1.0), (sp.S.false, 0.0),
             (3, 3.0), (0.25, 0.25), (sp.EulerGamma, float(sp.EulerGamma))]
    for expr, value in cases:
        node = from_sympy(expr)
        assert node.is_const and agree(node.value, value, 0.0), (expr, node.value)


def test_shared_subtrees_become_shared_nodes():
    u = sp.sin(x + y)
    node = from_sympy(u * sp.cos(u) + u**2 + u)
    assert ops_of(node).count("sin") == 1
    shared = apply("sin", X + Y)
    assert shared in node.args  # the very same object is reused
    assert sum(a is shared for n in topological_order([node]) for a in n.args) == 4


@pytest.mark.parametrize("step", ["sin", "square"])
def test_shared_dag_converts_in_linear_work(monkeypatch, step):
    # 40 levels that each use the previous level twice: 2**40 tree nodes, ~100 distinct ones.
    t = x
    for _ in range(40):
        t = sp.sin(t) * (t + y) if step == "sin" else (t + x) ** 2 + t
    distinct, stack = set(), [t]
    while stack:
        e = stack.pop()
        if e not in distinct:
            distinct.add(e)
            stack.extend(e.args)
    calls = []
    original = bridge._plan
    monkeypatch.setattr(bridge, "_plan", lambda e: calls.append(e) or original(e))
    node = from_sympy(t)
    assert len(calls) == len(set(calls)) <= len(distinct) < 200
    assert count_ops(node) <= len(distinct)
    assert math.isfinite(float(evaluate(node, {"x": 0.01, "y": 0.02}))) or step == "square"


def test_piecewise_becomes_nested_where():
    expr = sp.Piecewise((x, x < y), (y * 2, x > z), (z, True))
    node = from_sympy(expr)
    assert node.op == "where" and node.args[0] is apply("lt", X, Y)
    assert node.args[2].op == "where"
    for at in POINTS:
        assert agree(float(evaluate(node, at)), sympy_value(expr, at))


def test_piecewise_without_default_is_nan_elsewhere():
    node = from_sympy(sp.Piecewise((x, x > 0)))
    assert float(evaluate(node, {"x": 2.0})) == 2.0
    assert math.isnan(float(evaluate(node, {"x": -2.0})))


def test_boolean_conditions():
    expr = sp.Piecewise((1, sp.And(x < 1, y > 0)), (2, sp.Or(x > 2, sp.Not(sp.Eq(y, z)))),
                        (3, True))
    node = from_sympy(expr)
    grid = [-1.0, 0.0, 1.0, 2.5]
    for a in grid:
        for b in grid:
            for c in (0.0, 1.0):
                at = {"x": a, "y": b, "z": c}
                assert float(evaluate(node, at)) == sympy_value(expr, at), at


def test_heaviside():
    node = from_sympy(sp.Heaviside(x))
    assert [float(evaluate(node, {"x": v})) for v in (-2.0, 0.0, 3.0)] == [0.0, 0.5, 1.0]
    node = from_sympy(sp.Heaviside(x, 1))
    assert float(evaluate(node, {"x": 0.0})) == 1.0
    # ...and the same structure as spelled in the docs.
    assert from_sympy(sp.Heaviside(y)) is apply(
        "where", Y > 0.0, 1.0, apply("where", apply("eq", Y, 0.0), 0.5, 0.0))


def test_matrix_helper_shares_across_entries():
    u = sp.sin(x * y)
    rows = from_sympy_matrix(sp.Matrix([[u, u + 1], [u**2, 3]]))
    assert len(rows) == 2 and all(len(r) == 2 for r in rows)
    assert rows[0][0] is apply("sin", X * Y)
    assert rows[1][1].is_const and rows[1][1].value == 3.0


@pytest.mark.parametrize("bad, message", [
    (sp.Function("f")(x), "'f'"), (sp.zeta(x), "zeta"), (sp.I * x, "ImaginaryUnit"),
    (sp.Integral(x, x), "Integral"), ("x + 1", "str"), (sp.Matrix([x]), "from_sympy_matrix"),
    (sp.Xor(x > 0, y > 0), "Xor"), (sp.sin(sp.Function("g")(x)) + 1, "'g'"),
])
def test_unsupported_input_raises(bad, message):
    with pytest.raises(ValueError, match=message):
        from_sympy(bad)


# -- symgraph -> SymPy ----------------------------------------------------------------------


def test_symbols_are_real_by_default_and_can_be_chosen():
    assert to_sympy(X) == sp.Symbol("x", real=True)
    assert sp.diff(to_sympy(abs(X)), x) == sp.sign(x)  # why real: no re/im in derivatives
    plain = sp.Symbol("x")
    assert to_sympy(X + Y, {"x": plain}) == plain + y
    assert to_sympy([X, Y * 2.0]) == [x, 2 * y]


def test_comparisons_are_numbers_except_as_conditions():
    relation = sp.StrictLessThan(x, y)
    assert to_sympy(X < Y) == sp.Piecewise((1, relation), (0, True))
    assert to_sympy(X + (X < Y)) == x + sp.Piecewise((1, relation), (0, True))
    assert to_sympy(apply("where", X < Y, X, Y)) == sp.Piecewise((x, relation), (y, True))
    assert to_sympy(apply("where", X, X, Y)) == sp.Piecewise((x, sp.Ne(x, 0)), (y, True))


def test_decided_conditions_pick_their_branch():
    assert to_sympy(apply("where", apply("ne", X, X), X, Y)) == y
    assert to_sympy(apply("where", apply("eq", X, X), X, Y)) == x
    assert to_sympy(apply("lt", X, math.nan)) == 0  # IEEE: comparisons with nan are false
    assert to_sympy(apply("ne", X, math.nan)) == 1


def test_constants():
    assert to_sympy(X**0.5) == sp.sqrt(x)
    assert to_sympy(X * 0.375) == sp.Rational(3, 8) * x
    assert to_sympy(X + 0.1) == x + sp.Float(0.1)
    assert float(to_sympy(X + 0.1).args[0]) == 0.1
    assert to_sympy(X + math.inf) == x + sp.oo
    assert to_sympy(X * 1e300).args[0] == sp.Float(1e300)


def test_output_is_deterministic():
    node = apply("where", X < Y, apply("sin", X * Y) + Z, apply("max", X, Z) / Y)
    assert sp.srepr(to_sympy(node)) == sp.srepr(to_sympy(node))
    assert str(to_sympy(node)) == "Piecewise((z + sin(x*y), x < y), (Max(x, z)/y, True))"


# -- depth: no recursion in our code ----------------------------------------------------------


def test_deep_chain_both_ways_under_default_recursion_limit():
    # exp is a chain SymPy itself can build 100,000 deep bottom-up (sin, log, pow recurse
    # inside SymPy's own evaluation long before that, so they cannot be used for this).
    chain = X
    for _ in range(100_000):
        chain = apply("exp", chain)
    with recursion_limit(1000):
        expr = to_sympy(chain)
        assert from_sympy(expr) is chain


def test_from_sympy_of_a_deep_mixed_chain():
    # Built bottom-up so SymPy caches hashes; SymPy's own constructors limit the mix of ops
    # (exp inside products, sqrt of exp, ... recurse in SymPy), so products and Piecewise.
    e = x
    for i in range(5000):
        e = e * x + 2 if i % 2 else sp.Piecewise((e, x < y), (y, True))
    with recursion_limit(1000):
        node = from_sympy(e)
    assert count_ops(node) == 3 * 2500 + 1  # a where, mul and add per 2 levels; one lt
    value = float(evaluate(node, {"x": 0.5, "y": 1.0}))
    assert np.isclose(value, 4.0)  # e -> 0.5 e + 2 converges to 4
