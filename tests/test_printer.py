"""Printing: readable minimal-parenthesis text that parses back to the very same node, LaTeX,
the shared (CSE) form, repr, and size/depth limits."""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symgraph.frontends.parser import parse
from symgraph.ir import printer
from symgraph.ir.node import Node, apply, const, symbol, symbols
from symgraph.ir.ops import OPS
from symgraph.ir.printer import number_text


# This file tests the printers of the DAG's own form (``tidy=False``), which parse back to the
# very node; tests/test_tidy.py tests the display form that to_text prints by default.
def to_text(node, *args, **kwargs):
    return printer.to_text(node, *args, tidy=False, **kwargs)


def to_latex(node, *args, **kwargs):
    return printer.to_latex(node, *args, tidy=False, **kwargs)


def to_text_cse(outputs, names):
    return printer.to_text_cse(outputs, names, tidy=False)


x, y, z = symbols("x y z")


def neg(n):
    return apply("neg", n)


READABLE = [
    (lambda: x**2 + 2 * x + 1, "x**2 + 2*x + 1"),
    (lambda: 2 * x + 2, "2*x + 2"),
    (lambda: x - y, "x - y"),
    (lambda: x - 2 * y, "-2*y + x"),  # canonical term order: products before symbols
    (lambda: -x, "-x"),
    (lambda: x / y, "x/y"),
    (lambda: apply("sin", x), "sin(x)"),
    (lambda: apply("where", x > 0, x, -x), "where(x > 0, x, -x)"),
    (lambda: apply("atan2", x, y + 1), "atan2(x, y + 1)"),
    (lambda: x + -2, "x - 2"),
    (lambda: apply("pow", -2, x), "(-2)**x"),
    (lambda: x**-1, "x**(-1)"),
    (lambda: 2 ** (-x), "2**(-x)"),
    (lambda: (x**2) ** 3, "(x**2)**3"),
    (lambda: x ** (y**z), "x**y**z"),
    (lambda: -(x**2), "-x**2"),
    (lambda: (-x) ** 2, "(-x)**2"),
    (lambda: neg(x * y), "-(x*y)"),
    (lambda: -2 * x, "-2*x"),
    (lambda: -(2 * x), "-2*x"),  # the graph folds neg(mul(2, x)) into mul(-2, x)
    (lambda: x * (y / z), "x*(y/z)"),
    (lambda: x * y / z, "x*y/z"),
    (lambda: x / (y * z), "x/(y*z)"),
    (lambda: x / (y / z), "x/(y/z)"),
    (lambda: x / -y, "x/(-y)"),
    (lambda: neg(x / y), "-(x/y)"),
    (lambda: (-x) / y, "-x/y"),
    (lambda: z - (-x) / y, "z - (-x/y)"),
    (lambda: neg(x + y), "-(x + y)"),
    (lambda: (x + y) * z, "z*(x + y)"),
    (lambda: apply("lt", x < y, z), "(x < y) < z"),
    (lambda: apply("lt", x, y < z), "x < (y < z)"),
    (lambda: apply("eq", x + 1, y), "x + 1 == y"),
    (lambda: apply("ne", x, y), "x != y"),
    (lambda: apply("add", x < y, apply("sin", z)), None),  # order by digest; parens checked below
]


@pytest.mark.parametrize("build, expected", READABLE, ids=[str(i) for i in range(len(READABLE))])
def test_text_is_readable_with_minimal_parentheses_and_round_trips(build, expected):
    node = build()
    text = to_text(node)
    if expected is not None:
        assert text == expected
    assert parse(text) is node


CONSTANTS = [
    (2.0, "2"), (-3.0, "-3"), (2.5, "2.5"), (0.1, "0.1"), (1e20, "1e+20"), (1e16, "1e+16"),
    (9007199254740993.0, "9007199254740992"), (1e-7, "1e-07"), (0.0, "0"), (-0.0, "-0.0"),
    (math.inf, "inf"), (-math.inf, "-inf"), (math.nan, "nan"), (math.pi, "pi"), (math.e, "e"),
    (-math.pi, "-pi"), (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
]


@pytest.mark.parametrize("value, text", CONSTANTS, ids=[t for _, t in CONSTANTS])
def test_constants_print_as_integers_shortest_reprs_or_names(value, text):
    assert to_text(const(value)) == text
    assert parse(text) is const(value)


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_every_float_prints_as_text_that_reads_back_exactly(value):
    assert parse(number_text(value)) is const(value)
    assert parse(to_text(x * value + value)) is x * value + value


def test_negative_and_special_constants_inside_expressions_round_trip():
    for value in [-2.0, -0.0, -math.inf, math.nan, -0.5, -math.pi, 1e300, -1e-300]:
        for node in [x + value, x * value, x**value, apply("pow", value, x), x / value,
                     apply("div", value, x), y - x * value, apply("lt", value, x)]:
            assert parse(to_text(node)) is node, to_text(node)


# -- the round-trip property over random expressions --------------------------------------

OP_NAMES = sorted(OPS)
SMALL = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, 10.0, 0.1, 1e20, -1e-7, math.inf,
         -math.inf, math.nan, math.pi, math.e]


@st.composite
def expressions(draw, max_ops: int = 12) -> Node:
    """Random nodes built through graph.apply from x, y, z and a few constants."""
    pool = [x, y, z] + [const(v) for v in draw(st.lists(st.sampled_from(SMALL), min_size=1,
                                                        max_size=3))]
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(st.sampled_from(OP_NAMES))
        arity = OPS[op].arity
        count = arity if arity >= 0 else draw(st.integers(1, 4))
        args = [pool[draw(st.integers(0, len(pool) - 1))] for _ in range(count)]
        pool.append(apply(op, *args))
    return pool[-1]


@settings(max_examples=400, deadline=None)
@given(expressions())
def test_parse_of_to_text_is_the_same_node(node):
    assert parse(to_text(node)) is node


@settings(max_examples=100, deadline=None)
@given(expressions())
def test_latex_and_repr_work_for_random_expressions(node):
    latex = to_latex(node)
    assert latex and "\0" not in latex
    assert repr(node).startswith("Node(") and len(repr(node)) <= 86


# -- LaTeX ------------------------------------------------------------------------------------

@pytest.mark.parametrize("build, expected", [
    (lambda: x**2 + 2 * x + 1, r"{x}^{2} + 2 \cdot x + 1"),
    (lambda: x / (y + 1), r"\frac{x}{y + 1}"),
    (lambda: x - y, "x - y"),
    (lambda: (x + 1) ** 2, r"{\left(x + 1\right)}^{2}"),
    (lambda: 2 * (x + 1), r"2 \cdot \left(x + 1\right)"),
    (lambda: apply("sqrt", x), r"\sqrt{x}"),
    (lambda: apply("sin", x), r"\sin\left(x\right)"),
    (lambda: apply("le", x, y), r"x \le y"),
    (lambda: apply("hypot", x + 1, y), r"\sqrt{\left(x + 1\right)^2 + y^2}"),
    (lambda: apply("where", x > 0, x, -x),
     r"\begin{cases} x & x > 0 \\ -x & \text{otherwise} \end{cases}"),
    (lambda: const(math.pi) * symbol("alpha"), r"\pi \cdot \alpha"),
    (lambda: symbol("x1") + symbol("rate"), r"\mathrm{rate} + x_{1}"),
    (lambda: 1.5e-7 * x, r"1.5 \cdot 10^{-7} \cdot x"),
    (lambda: const(-math.inf), r"-\infty"),
])
def test_latex_uses_the_op_templates(build, expected):
    assert to_latex(build()) == expected


@pytest.mark.parametrize("name", OP_NAMES)
def test_latex_renders_every_op(name):
    args = (x, y, z)[: OPS[name].arity if OPS[name].arity >= 0 else 2]
    latex = to_latex(apply(name, *args))
    assert "x" in latex and latex.count("{") == latex.count("}")
    assert latex.count(r"\left") == latex.count(r"\right")


def test_latex_of_inverse_trig_functions_uses_arc_names():
    for name in ("asin", "acos", "atan"):
        assert to_latex(apply(name, x)) == rf"\arc{name[1:]}\left(x\right)"


# -- shared form, limits, repr ------------------------------------------------------------

def test_cse_form_names_each_reused_subexpression_once_in_order():
    e = apply("exp", x)
    s = apply("sin", e)
    assert to_text_cse([s * e, s + 1], ["f", "g"]) == (
        "t0 = exp(x)\nt1 = sin(t0)\nf = t1*t0\ng = t1 + 1")


def test_cse_temporaries_avoid_symbol_and_output_names():
    t0 = symbol("t0")
    e = apply("exp", t0)
    assert to_text_cse([e * e, e], ["f", "t1"]) == "_t0 = exp(t0)\nf = _t0**2\nt1 = _t0"


def test_cse_checks_names_match_outputs():
    with pytest.raises(ValueError):
        to_text_cse([x, y], ["f"])


def doubling_dag(levels: int) -> Node:
    node = x
    for _ in range(levels):
        node = apply("sin", node) + apply("cos", node)
    return node


def test_exponentially_shared_dag_is_refused_not_printed():
    node = doubling_dag(80)  # 160 nodes, a tree of ~2**80 characters
    with pytest.raises(ValueError, match="to_text_cse"):
        to_text(node)
    assert len(to_text_cse([node], ["f"]).splitlines()) == 80  # t0..t78, then f
    assert len(repr(node)) <= 86  # repr only does the work for what it shows


def test_max_length_is_exact_and_none_means_no_limit():
    node = doubling_dag(4)
    text = to_text(node, max_length=None)
    assert to_text(node, max_length=len(text)) == text
    with pytest.raises(ValueError):
        to_text(node, max_length=len(text) - 1)


def test_str_repr_and_repr_latex_are_installed_on_node():
    node = x**2 + 2 * x + 1
    assert str(node) == "x**2 + 2*x + 1"
    assert repr(node) == "Node(x**2 + 2*x + 1)"
    assert node._repr_latex_() == r"${x}^{2} + 2 \cdot x + 1$"
    wide = apply("add", *[symbol(f"v{i}") for i in range(1000)])
    assert len(repr(wide)) <= 86 and repr(wide).endswith("...)")


def test_printing_rejects_non_nodes():
    with pytest.raises(TypeError):
        to_text("x")


# -- depth --------------------------------------------------------------------------------

DEPTH = 100_000


def test_deep_chain_prints_and_parses_back_at_the_default_recursion_limit():
    assert sys.getrecursionlimit() == 1000
    node = x
    for i in range(DEPTH):  # a chain mixing calls, minus, powers, sums and quotients
        step = i % 5
        if step == 0:
            node = apply("sin", node)
        elif step == 1:
            node = -node
        elif step == 2:
            node = y**node
        elif step == 3:
            node = node + z
        else:
            node = node / y
    text = to_text(node)
    assert parse(text) is node
    assert len(to_latex(node)) > DEPTH
    assert repr(node).startswith("Node(")


def test_deep_sin_chain_text():
    node = x
    for _ in range(DEPTH):
        node = apply("sin", node)
    assert to_text(node) == "sin(" * DEPTH + "x" + ")" * DEPTH
