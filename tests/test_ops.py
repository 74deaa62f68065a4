"""Every OpSpec in OPS is complete and right: values, code templates, SymPy form, derivatives,
the conventions at non-differentiable points, and IEEE values at edges (with constant folding).

Rendered templates are our own generated code, evaluated here with `eval` on a namespace of
math/np (and symgraph.backends.numba.vecmath's functions, which lane templates call) to check that
they compute what `evaluate` computes.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symgraph.backends.numba import vecmath
from symgraph.ir.evaluate import evaluate
from symgraph.ir.node import Node, apply, symbol
from symgraph.ir.ops import OPS
from symgraph.ir.traversal import topological_order

from .strategies import COMPARISONS, SMOOTH_OPS, expressions, points

NAMES = sorted(OPS)
OPERANDS = ("a0", "a1", "a2")
FRACTIONS = (0.17, 0.58, 0.83)  # of each domain: off its middle (kinks sit at 0), no ties


def arities(spec) -> tuple[int, ...]:
    return (2, 3) if spec.arity < 0 else (spec.arity,)


def slot(spec, i: int) -> tuple[float, float]:
    return spec.domain[min(i, len(spec.domain) - 1)]  # n-ary ops list two slots


def sample_points(spec, n: int) -> list[tuple[float, ...]]:
    """Three points inside the op's domain; arguments differ, so min/max/eq never tie; an
    integer argument (an order) is rounded."""
    return [tuple(float(round(v)) if i in spec.integer_arguments else v
                  for i, v in enumerate(lo + (hi - lo) * FRACTIONS[(j + i) % 3]
                                        for i, (lo, hi) in enumerate(slot(spec, i)
                                                                     for i in range(n))))
            for j in range(3)]


def cases(names=NAMES):
    return [(name, n) for name in names for n in arities(OPS[name])]


def namespace(spec) -> dict:
    ns = {"math": math, "np": np} | {name: getattr(vecmath, name) for name in vecmath.PUBLIC}
    for line in spec.np_prelude:
        exec(line, ns)
    return ns


def value_of(entry, env) -> float:
    """A partial derivative entry (node, number or None for zero) at `env`."""
    if entry is None:
        return 0.0
    if isinstance(entry, Node):
        return float(evaluate(entry, env))
    return float(entry)


def sympy_float(expr) -> float:
    if expr is sp.S.true or expr is sp.S.false:
        return float(expr is sp.S.true)
    return float(sp.N(expr, 30))


def close(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(b))


# -- (a) completeness ----------------------------------------------------------------------


@pytest.mark.parametrize("name, n", cases())
def test_evaluate_on_domain(name, n):
    spec = OPS[name]
    assert spec.name == name
    assert len(spec.domain) >= n or spec.arity < 0
    for point in sample_points(spec, n):
        value = spec.evaluate(*map(np.float64, point))
        assert np.ndim(value) == 0 and math.isfinite(float(value)), (name, point)
        # ...and elementwise on arrays, as generated NumPy code uses it.
        arrays = spec.evaluate(*[np.array([v, v]) for v in point])
        assert np.shape(arrays) == (2,) and float(arrays[0]) == float(value)


@pytest.mark.parametrize("backend", ["py", "np", "nb", "lanes"])
@pytest.mark.parametrize("name, n", cases())
def test_template_computes_evaluate(name, n, backend):
    spec = OPS[name]
    names = list(OPERANDS[:n])
    code = spec.render(backend, names)
    assert all(v in code for v in names), code
    for point in sample_points(spec, n):
        expected = float(spec.evaluate(*map(np.float64, point)))
        env = namespace(spec) | dict(zip(names, point))
        if backend == "np":
            env |= {v: np.array([x, x]) for v, x in zip(names, point)}
        got = np.asarray(eval(code, env), dtype=float).ravel()[0]
        assert close(float(got), expected, 1e-13), (code, point, got, expected)


@pytest.mark.parametrize("backend", ["py", "np", "nb", "lanes"])
@pytest.mark.parametrize("name, n", cases())
def test_template_accepts_literal_operands(name, n, backend):
    # Code generators pass constants as literals such as "-1.98" into the same templates.
    spec = OPS[name]
    for point in sample_points(spec, n):
        expected = float(spec.evaluate(*map(np.float64, point)))
        code = spec.render(backend, [repr(float(v)) for v in point])
        got = float(np.asarray(eval(code, namespace(spec)), dtype=float))
        assert close(got, expected, 1e-13), (code, got, expected)


def test_pow_template_with_negative_literal_base():
    # `-2.0 ** y` would be -(2.0 ** y): the template must parenthesize the literal.
    for backend in ("py", "np", "nb", "lanes"):
        code = OPS["pow"].render(backend, ["-2.0", "a1"])
        assert eval(code, namespace(OPS["pow"]) | {"a1": 2.0}) == 4.0, (backend, code)


def test_where_sympy_with_a_decided_condition():
    # Ne(False, 0) would be True: a decided condition must pick its branch.
    a, b = sp.symbols("a b", real=True)
    assert OPS["where"].sympy(sp, sp.S.true, a, b) == a
    assert OPS["where"].sympy(sp, sp.S.false, a, b) == b


@pytest.mark.parametrize("name", NAMES)
def test_latex_renders(name):
    spec = OPS[name]
    # n-ary add/mul templates have two slots: a printer chains them for more operands.
    names = list(OPERANDS[:spec.arity if spec.arity >= 0 else 2])
    tex = spec.latex.format(*names)
    assert all(v in tex for v in names), tex
    assert tex.count("{") == tex.count("}"), tex


@pytest.mark.parametrize("name, n", cases())
def test_sympy_form_matches_evaluate(name, n):
    spec = OPS[name]
    syms = [sp.Symbol(v, real=True) for v in OPERANDS[:n]]
    expr = spec.sympy(sp, *syms)
    assert isinstance(expr, sp.Basic)
    for point in sample_points(spec, n):
        expected = float(spec.evaluate(*map(np.float64, point)))
        got = sympy_float(expr.subs(dict(zip(syms, map(sp.Float, point)))))
        assert close(got, expected, 1e-12), (name, point, got, expected)


@pytest.mark.parametrize("name, n", cases())
def test_partials_have_one_entry_per_argument(name, n):
    out = apply(name, *[symbol(v) for v in OPERANDS[:n]])
    assert out.op == name
    partials = OPS[name].partials(out.args, out)
    assert isinstance(partials, tuple) and len(partials) == n
    assert all(p is None or isinstance(p, (Node, int, float)) for p in partials)


# -- (b) derivatives agree with finite differences and with SymPy ---------------------------

# pow with a constant exponent takes its own partial rule.
CONST_POWERS = [("pow", 2.0), ("pow", 3.0), ("pow", -1.5), ("pow", 0.5)]


def derivative_cases():
    return [(name, n, None) for name, n in cases()] + [(op, 1, k) for op, k in CONST_POWERS]


def build(name: str, n: int, exponent):
    args = [symbol(v) for v in OPERANDS[:n]]
    out = apply(name, *args) if exponent is None else apply(name, args[0], exponent)
    return args, out


def symbolic_partials(args, out) -> dict[str, object]:
    """Partial derivative entries by argument name (symbols are distinct, so one each)."""
    entries = OPS[out.op].partials(out.args, out)
    by_name = {a.name: None for a in args}
    for arg, entry in zip(out.args, entries):
        if arg.is_symbol:
            by_name[arg.name] = entry
    return by_name


def five_point(f, x: float) -> float:
    h = 1e-3 * max(1.0, abs(x))
    return (f(x - 2 * h) - 8 * f(x - h) + 8 * f(x + h) - f(x + 2 * h)) / (12 * h)


@pytest.mark.parametrize("name, n, exponent", derivative_cases())
def test_partials_match_finite_differences(name, n, exponent):
    spec = OPS[name]
    args, out = build(name, n, exponent)
    partials = symbolic_partials(args, out)
    for point in sample_points(spec, n):
        env = dict(zip(OPERANDS, point))
        for k, arg in enumerate(args):
            if k in spec.integer_arguments:  # an order: not varied, its partial is None
                assert partials[arg.name] is None
                continue

            def f(t, arg=arg, env=env):
                return float(evaluate(out, env | {arg.name: t}))

            numeric = five_point(f, env[arg.name])
            exact = value_of(partials[arg.name], env)
            assert close(exact, numeric, 1e-6), (name, arg.name, point, exact, numeric)


@pytest.mark.parametrize("name, n, exponent", [
    c for c in derivative_cases() if c[0] not in COMPARISONS])  # relationals have no diff
def test_partials_match_sympy_diff(name, n, exponent):
    spec = OPS[name]
    args, out = build(name, n, exponent)
    partials = symbolic_partials(args, out)
    syms = {a.name: sp.Symbol(a.name, real=True) for a in args}
    operands = [syms[a.name] for a in args]
    if exponent is not None:
        operands.append(sp.Integer(int(exponent)) if exponent.is_integer() else
                        sp.Rational(exponent))
    expr = spec.sympy(sp, *operands)
    checked = 0
    for point in sample_points(spec, n):
        env = dict(zip(OPERANDS, point))
        subs = {syms[k]: sp.Float(env[k]) for k in syms}
        for arg in args:
            derivative = sp.diff(expr, syms[arg.name])
            if derivative.has(sp.Derivative):  # SymPy leaves floor'/ceil' undefined
                continue
            exact = sympy_float(derivative.subs(subs))
            assert close(value_of(partials[arg.name], env), exact, 1e-9), (name, arg.name, point)
            checked += 1
    assert checked or name in ("floor", "ceil")


# -- (c) conventions at non-differentiable points ---------------------------------------------


def partial_values(op: str, *values: float) -> list[float]:
    args = [symbol(v) for v in OPERANDS[:len(values)]]
    out = apply(op, *args)
    assert out.op == op
    env = dict(zip(OPERANDS, values))
    by_name = symbolic_partials(args, out)
    return [value_of(by_name[a.name], env) for a in args]


@pytest.mark.parametrize("zero", [0.0, -0.0])
def test_kinks_have_zero_derivative(zero):
    assert partial_values("abs", zero) == [0.0]
    assert partial_values("relu", zero) == [0.0]
    assert partial_values("abs", -2.0) == [-1.0] and partial_values("relu", -2.0) == [0.0]
    assert partial_values("relu", 2.0) == [1.0]


@pytest.mark.parametrize("op", ["sign", "floor", "ceil", *COMPARISONS])
def test_piecewise_constant_ops_have_no_derivative(op):
    n = OPS[op].arity
    args = [symbol(v) for v in OPERANDS[:n]]
    out = apply(op, *args)
    assert OPS[op].partials(out.args, out) == (None,) * n


@pytest.mark.parametrize("op", ["min", "max"])
def test_min_max_give_a_tie_to_the_first_argument(op):
    assert partial_values(op, 1.25, 1.25) == [1.0, 0.0]
    assert partial_values(op, 0.0, 0.0) == [1.0, 0.0]
    low_wins = [1.0, 0.0] if op == "min" else [0.0, 1.0]
    assert partial_values(op, -1.0, 2.0) == low_wins
    assert partial_values(op, 2.0, -1.0) == low_wins[::-1]


def test_hypot_gradient_is_zero_at_origin():
    assert partial_values("hypot", 0.0, 0.0) == [0.0, 0.0]
    assert partial_values("hypot", 3.0, -4.0) == pytest.approx([0.6, -0.8])


@pytest.mark.parametrize("condition, branch", [(1.0, 0), (-2.0, 0), (0.0, 1), (math.nan, 0)])
def test_where_routes_the_gradient_to_the_chosen_branch(condition, branch):
    values = partial_values("where", condition, 5.0, 7.0)
    assert values[0] == 0.0  # the condition has derivative zero
    assert values[1:] == ([1.0, 0.0] if branch == 0 else [0.0, 1.0])


# -- (d) IEEE values at the edges, by `evaluate` and by constant folding in `apply` -----------

INF, NAN = math.inf, math.nan
EDGES = [
    ("div", (1.0, 0.0), INF), ("div", (-1.0, 0.0), -INF), ("div", (0.0, 0.0), NAN),
    ("div", (1.0, -0.0), -INF), ("log", (0.0,), -INF), ("log", (-1.0,), NAN),
    ("sqrt", (-1.0,), NAN), ("sqrt", (-0.0,), -0.0), ("exp", (1000.0,), INF),
    ("exp", (-INF,), 0.0), ("pow", (0.0, -1.0), INF), ("pow", (-8.0, 1 / 3), NAN),
    ("pow", (NAN, 0.0), 1.0), ("pow", (1.0, NAN), 1.0), ("add", (INF, -INF), NAN),
    ("mul", (0.0, INF), NAN), ("neg", (0.0,), -0.0), ("log1p", (-1.0,), -INF),
    ("log2", (0.0,), -INF), ("atanh", (1.0,), INF), ("acosh", (0.5,), NAN),
    ("asin", (2.0,), NAN), ("tanh", (INF,), 1.0), ("erf", (-INF,), -1.0),
    ("erfc", (-INF,), 2.0), ("sigmoid", (-INF,), 0.0), ("softplus", (INF,), INF),
    ("max", (NAN, 1.0), NAN), ("min", (1.0, NAN), NAN), ("relu", (NAN,), NAN),
    ("abs", (-INF,), INF), ("sign", (NAN,), NAN), ("floor", (-0.5,), -1.0),
    ("ceil", (INF,), INF), ("lt", (NAN, 1.0), 0.0), ("eq", (NAN, NAN), 0.0),
    ("ne", (NAN, NAN), 1.0), ("where", (NAN, 1.0, 2.0), 1.0), ("where", (0.0, 1.0, 2.0), 2.0),
    ("atan2", (0.0, -1.0), math.pi), ("atan2", (-0.0, -1.0), -math.pi),
    ("hypot", (INF, NAN), INF), ("cbrt", (-8.0,), -2.0),
]


def same_float(a: float, b: float) -> bool:
    if math.isnan(b):
        return math.isnan(a)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@pytest.mark.parametrize("op, args, expected", EDGES)
def test_edge_values(op, args, expected):
    with np.errstate(all="ignore"):
        direct = float(OPS[op].evaluate(*map(np.float64, args)))
    assert same_float(direct, expected), (op, args, direct)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # folding must not leak NumPy warnings
        folded = apply(op, *args)
    assert folded.is_const and same_float(folded.value, expected), (op, args, folded.value)


SPECIALS = (INF, -INF, NAN, 0.0, -0.0, 1.5)


@pytest.mark.parametrize("name, n", cases())
def test_every_op_folds_special_values(name, n):
    spec = OPS[name]
    for first in SPECIALS:
        for other in (first, 1.5):
            args = (first,) + (other,) * (n - 1)
            with np.errstate(all="ignore"):
                expected = float(spec.evaluate(*map(np.float64, args)))
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                folded = apply(name, *args)
            assert folded.is_const
            assert same_float(folded.value, expected) or folded.value == expected, (name, args)


# -- the shared strategy is usable ----------------------------------------------------------


@settings(max_examples=3, deadline=None)
@given(st.data())
def test_strategy_draws_mostly_finite_expressions(data):
    finite = 0
    for _ in range(60):
        expr = data.draw(expressions())
        at = data.draw(points())
        assert isinstance(expr, Node)
        finite += math.isfinite(float(evaluate(expr, at)))
    assert finite >= 45


@settings(max_examples=40, deadline=None)
@given(expressions(ops=SMOOTH_OPS, max_depth=3), points())
def test_strategy_respects_the_op_list(expr, at):
    ops = {n.op for n in topological_order([expr])}
    assert ops <= set(SMOOTH_OPS) | {"const", "symbol"}
    assert isinstance(float(evaluate(expr, at)), float)
