"""The safe parser: precedence, calls, numbers, hostile input, error messages."""

from __future__ import annotations

import gc
import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symgraph.frontends.parser import ParseError, parse
from symgraph.ir.node import Node, apply, const, symbol, symbols
from symgraph.ir.ops import ALIASES, OPS

x, y, z, a, b, c = symbols("x y z a b c")


def neg(n):
    return apply("neg", n)


# -- precedence ---------------------------------------------------------------------------------

PRECEDENCE = [
    ("-x**2", lambda: neg(x**2)),
    ("-(x**2)", lambda: neg(x**2)),
    ("(-x)**2", lambda: apply("pow", neg(x), 2)),
    ("2**x**2", lambda: apply("pow", 2, x**2)),
    ("(2**x)**2", lambda: apply("pow", apply("pow", 2, x), 2)),
    ("2**-x", lambda: apply("pow", 2, neg(x))),
    ("x**-y**z", lambda: apply("pow", x, neg(y**z))),
    ("-2**2", lambda: const(-4)),
    ("(-2)**2", lambda: const(4)),
    ("-2**-2", lambda: const(-0.25)),
    ("2*3**2", lambda: const(18)),
    ("2**3**2", lambda: const(512)),
    ("x^2", lambda: x**2),
    ("x^y^z", lambda: apply("pow", x, y**z)),
    ("x - y", lambda: apply("add", x, neg(y))),
    ("x - y - z", lambda: apply("add", x, neg(y), neg(z))),
    ("x - (y - z)", lambda: apply("add", x, neg(apply("add", y, neg(z))))),
    ("1 - 2 - 3", lambda: const(-4)),
    ("x + y*z", lambda: apply("add", x, apply("mul", y, z))),
    ("(x + y)*z", lambda: apply("mul", apply("add", x, y), z)),
    ("x*y/z", lambda: apply("div", apply("mul", x, y), z)),
    ("x/y*z", lambda: apply("mul", apply("div", x, y), z)),
    ("x/y/z", lambda: apply("div", apply("div", x, y), z)),
    ("x/(y*z)", lambda: apply("div", x, apply("mul", y, z))),
    ("x*y/z*a*b/c", lambda: apply("div", apply("mul", apply("div", apply("mul", x, y), z), a, b),
                                  c)),
    ("-x*y", lambda: apply("mul", neg(x), y)),
    ("x*-y", lambda: apply("mul", x, neg(y))),
    ("x + -y", lambda: apply("add", x, neg(y))),
    ("+x", lambda: x),
    ("--x", lambda: x),
    ("- - -x", lambda: neg(x)),
    ("-(-(x))", lambda: x),
    ("x < y + 1", lambda: apply("lt", x, apply("add", y, 1))),
    ("x + 1 >= y*2", lambda: apply("ge", apply("add", x, 1), apply("mul", y, 2))),
    ("x <= y", lambda: apply("le", x, y)),
    ("x > y", lambda: apply("gt", x, y)),
    ("x == y", lambda: apply("eq", x, y)),
    ("x != y", lambda: apply("ne", x, y)),
    ("(a < b) < c", lambda: apply("lt", apply("lt", a, b), c)),
    ("a < (b < c)", lambda: apply("lt", a, apply("lt", b, c))),
    ("(x + y) + z", lambda: apply("add", x, y, z)),
    ("x + (y + z)", lambda: apply("add", x, y, z)),
    ("((x*y)*z)", lambda: apply("mul", x, y, z)),
    ("2*x**3", lambda: apply("mul", 2, x**3)),
    ("sin(x)**2", lambda: apply("pow", apply("sin", x), 2)),
    ("-sin(x)**2", lambda: neg(apply("pow", apply("sin", x), 2))),
    ("x**2 + 2*x + 1", lambda: x**2 + 2 * x + 1),
]


@pytest.mark.parametrize("text, expected", PRECEDENCE, ids=[t for t, _ in PRECEDENCE])
def test_precedence_and_associativity_follow_python(text, expected):
    assert parse(text) is expected()


def test_whitespace_and_newlines_are_ignored():
    assert parse(" x\t+\r\n y ") is x + y


def test_a_run_of_terms_is_one_add_node():
    node = parse("x + y - z + a")
    assert node.op == "add" and len(node.args) == 4


# -- calls ------------------------------------------------------------------------------------

CALLABLE = sorted(name for name, spec in OPS.items() if spec.infix is None)


@pytest.mark.parametrize("name", CALLABLE)
def test_every_op_without_infix_is_callable_by_name(name):
    args = (x, y, z)[: OPS[name].arity]
    text = f"{name}({', '.join(s.name for s in args)})"
    assert parse(text) is apply(name, *args)


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_every_alias_calls_its_op(alias):
    target = ALIASES[alias]
    args = (x, y, z)[: OPS[target].arity]
    assert parse(f"{alias}({', '.join(s.name for s in args)})") is apply(target, *args)


def test_extra_functions_pow_log_base_and_nary_min_max():
    assert parse("pow(x, y)") is x**y
    assert parse("log(x, 2)") is apply("log", x) / apply("log", 2)
    assert parse("min(x, y, z)") is apply("min", apply("min", x, y), z)
    assert parse("Max(x, y, z, a)") is apply("max", apply("max", apply("max", x, y), z), a)
    assert parse("where(x > 0, x, -x)") is apply("where", x > 0, x, -x)


def test_trailing_comma_in_a_call_is_accepted_like_python():
    assert parse("sin(x,)") is apply("sin", x)
    assert parse("atan2(x, y,)") is apply("atan2", x, y)


@pytest.mark.parametrize("text", ["add(x, y)", "mul(x, y)", "neg(x)", "div(x, y)", "lt(x, y)"])
def test_infix_ops_are_not_callable_by_name(text):
    with pytest.raises(ParseError, match="unknown function"):
        parse(text)


@pytest.mark.parametrize("text, message", [
    ("sin(x, y)", r"sin\(\) takes 1 argument \(2 given\)"),
    ("atan2(x)", r"atan2\(\) takes 2 arguments \(1 given\)"),
    ("where(x, y)", r"where\(\) takes 3 arguments"),
    ("log(x, y, z)", r"log\(\) takes 1 or 2 arguments"),
    ("min(x)", r"min\(\) takes at least 2 arguments"),
    ("pow(x)", r"pow\(\) takes 2 arguments"),
    ("sin()", r"sin\(\) takes 1 argument \(0 given\)"),
])
def test_wrong_arity_names_the_function_and_the_count(text, message):
    with pytest.raises(ParseError, match=message) as info:
        parse(text)
    assert info.value.position == 0


def test_unknown_function_is_reported_at_its_name_before_its_arguments():
    with pytest.raises(ParseError, match="unknown function 'foo'") as info:
        parse("x + foo(1 +")
    assert info.value.position == 4


# -- names ------------------------------------------------------------------------------------

def test_constants_and_symbols():
    assert parse("pi").value == math.pi
    assert parse("e").value == parse("E").value == math.e
    assert parse("inf").value == parse("oo").value == math.inf
    assert math.isnan(parse("nan").value)
    assert parse("alpha_1") is symbol("alpha_1")
    assert parse("θ + 1") is symbol("θ") + 1


def test_symbols_mapping_restricts_and_maps_names():
    r = symbol("r")
    assert parse("2*x", {"x": r}) is 2 * r
    assert parse("pi*x", {"x": x}).args[0].value == math.pi
    assert parse("e", {"e": symbol("e")}) is symbol("e")  # an explicit entry wins
    with pytest.raises(ParseError, match="unknown variable 'y'") as info:
        parse("x + y", {"x": x})
    assert info.value.position == 4


@pytest.mark.parametrize("word", ["lambda", "import", "True", "None", "and", "not", "if", "def"])
def test_python_keywords_are_rejected(word):
    with pytest.raises(ParseError, match="keyword") as info:
        parse(f"x + {word}")
    assert info.value.position == 4


# -- numbers ----------------------------------------------------------------------------------

NUMBERS = [
    ("1", 1.0), ("1.5", 1.5), (".5", 0.5), ("5.", 5.0), ("1e-3", 1e-3), ("1E+3", 1e3),
    ("1_000", 1000.0), ("0x1F", 31.0), ("0X1f", 31.0), ("0o17", 15.0), ("0O17", 15.0),
    ("0b101", 5.0), ("0B1_0", 2.0), ("0", 0.0), ("00", 0.0), ("0_0", 0.0), ("0.0", 0.0),
    ("1.e5", 1e5), ("1_0.0_1e1_0", 10.01e10), ("1e999999", math.inf), ("1e-999999", 0.0),
    ("123456789012345678901234567890", 1.2345678901234568e29), ("9" * 400, math.inf),
    ("0x" + "f" * 300, math.inf), ("0x" + "0" * 1000 + "1", 1.0), ("0b" + "1" * 60, 2.0**60 - 1),
    ("0x" + "f" * 256, math.inf), ("0x1" + "0" * 256, math.inf), ("0x1" + "0" * 255, 2.0**1020),
]


@pytest.mark.parametrize("text, value", NUMBERS, ids=[t[:20] for t, _ in NUMBERS])
def test_number_literals_become_float64_constants(text, value):
    node = parse(text)
    assert node.is_const and node.value == value


@pytest.mark.parametrize("text, position", [
    ("1e", 1), ("1e+", 1), ("1__0", 1), ("1_", 1), ("0x", 1), ("0x_", 1), ("0b2", 1),
    ("0o8", 1), ("1.2.3", 3), ("1..2", 2), ("1.e", 2), ("1._5", 2), ("1a", 1), ("007", 0),
    ("1j", 1), ("2.5J", 3), ("x + 1j", 5),
])
def test_malformed_numbers_are_errors_at_the_bad_character(text, position):
    with pytest.raises(ParseError) as info:
        parse(text)
    assert info.value.position == position


def test_complex_literal_says_complex_is_unsupported():
    with pytest.raises(ParseError, match="complex"):
        parse("1j")


def test_huge_powers_fold_to_inf_without_big_ints():
    assert parse("10**10**10").value == math.inf
    assert parse("2**1024").value == math.inf
    assert parse("(-8)**(1/3)").value != parse("(-8)**(1/3)").value  # nan


# -- hostile input ----------------------------------------------------------------------------

N = 100_000
HOSTILE = [  # (id, input factory, None for "gives a node" or the expected error position)
    ("deep-sin", lambda: "sin(" * 10_000 + "x" + ")" * 10_000, None),
    ("deep-parens", lambda: "(" * N + "x" + ")" * N, None),
    ("deep-parens-10k", lambda: "(" * 10_000 + "x" + ")" * 10_000, None),
    ("pow-chain", lambda: "**".join(["x"] * 10_000), None),
    ("caret-chain", lambda: "^".join(["2"] * 1000), None),
    ("neg-parens", lambda: "-(" * 10_000 + "x" + ")" * 10_000, None),
    ("unary-minus-run", lambda: "-" * (N + 1) + "x", None),
    ("nested-sums-left", lambda: "(" * 20_000 + "x" + " + y)" * 20_000, None),
    ("nested-sums-right", lambda: "x + (" * 20_000 + "y" + ")" * 20_000, None),
    ("1MB-sum", lambda: "+".join(["x"] * 500_000), None),
    ("200k-term-sum", lambda: " + ".join(f"x{i}" for i in range(200_000)), None),
    ("1MB-name", lambda: "x" * 1_000_000, None),
    ("1MB-digits", lambda: "9" * 1_000_000, None),
    ("huge-hex", lambda: "0x" + "F" * 100_000, None),
    ("10**10**10", lambda: "10**10**10", None),
    ("1e999999", lambda: "1e999999", None),
    ("unicode-name", lambda: "θ + ψ_1 + é", None),
    ("subscript-digit", lambda: "θ₁", 1),  # not an identifier character in Python either
    ("fullwidth-name", lambda: "ｘ", None),
    ("crlf", lambda: "x\r\n+ y", None),
    ("nan-inf", lambda: "nan + inf - oo", None),
    ("NUL", lambda: "x\0", 1),
    ("NUL-only", lambda: "\0", 0),
    ("ANSI-escape", lambda: "\x1b[31m", 0),
    ("DEL", lambda: "x\x7f", 1),
    ("zero-width-space", lambda: "x\u200b", 1),
    ("BOM", lambda: "\ufeffx", 0),
    ("lone-surrogate", lambda: "x + \ud800", 4),
    ("superscript", lambda: "x²", 1),
    ("empty", lambda: "", 0),
    ("blank", lambda: "   \n ", 0),
    ("__import__", lambda: "__import__('os')", 0),
    ("eval", lambda: 'eval("1")', 0),
    ("exec", lambda: 'exec("import os")', 0),
    ("print", lambda: "print(x)", 0),
    ("dunder-attr", lambda: "x.__class__", 1),
    ("os.system", lambda: "os.system('ls')", 2),
    ("lambda", lambda: "lambda: 0", 0),
    ("import", lambda: "import os", 0),
    ("ternary", lambda: "x if y else z", 2),
    ("((((", lambda: "((((", 3),
    ("(((( deep", lambda: "(" * N, N - 1),
    ("))))", lambda: "))))", 0),
    ("extra-close", lambda: "(" * 1000 + "x" + ")" * 1001, 2001),
    ("unclosed-multiline", lambda: "(x +\n y", 0),
    ("sin(", lambda: "sin(", 3),
    ("sin-unclosed-deep", lambda: "sin(" * 1000, 3999),
    ("sin(x, y)", lambda: "sin(x, y)", 0),
    ("foo(x)", lambda: "foo(x)", 0),
    ("f()", lambda: "f()", 0),
    ("sin(,)", lambda: "sin(,)", 4),
    ("sin(x,,)", lambda: "sin(x,,)", 6),
    ("()", lambda: "()", 0),
    ("tuple", lambda: "(x, y)", 2),
    ("x +", lambda: "x +", 3),
    ("* x", lambda: "* x", 0),
    ("x **", lambda: "x **", 4),
    ("x ** -", lambda: "x ** -", 6),
    ("juxtaposition", lambda: "x y", 2),
    ("number-after-name", lambda: "x.0", 1),
    ("number-after-number", lambda: "1 2", 2),
    ("sin x", lambda: "sin x", 4),
    ("2(3)", lambda: "2(3)", 1),
    ("call-result", lambda: "(x)(y)", 3),
    ("chained-comparison", lambda: "a < b < c", 6),
    ("modulo", lambda: "x % 2", 2),
    ("floordiv", lambda: "x // 2", 2),
    ("matmul", lambda: "x @ y", 2),
    ("bitand", lambda: "x & y", 2),
    ("bitor", lambda: "x | y", 2),
    ("invert", lambda: "~x", 0),
    ("shift", lambda: "x << 2", 2),
    ("assignment", lambda: "x = 1", 2),
    ("walrus", lambda: "(x := 1)", 3),
    ("semicolon", lambda: "x; y", 1),
    ("list", lambda: "[x]", 0),
    ("index", lambda: "x[y]", 1),
    ("element symbol", lambda: "x[0] + W[0,1]", None),  # a traced array's symbols read back
    ("set", lambda: "{x}", 0),
    ("string", lambda: "'x'", 0),
    ("keyword-arg", lambda: "sin(x=1)", 5),
    ("star-args", lambda: "max(*x)", 4),
    ("comment", lambda: "x # y", 2),
    ("backslash", lambda: "x \\\n+ y", 2),
    ("True", lambda: "True", 0),
    ("open-parens-then-junk", lambda: "(" * N + "%", N),
]


@pytest.mark.parametrize("make, position", [(m, p) for _, m, p in HOSTILE],
                         ids=[i for i, _, _ in HOSTILE])
def test_hostile_input_gives_a_node_or_a_positioned_parse_error(make, position):
    text = make()
    if position is None:
        assert isinstance(parse(text), Node)
        return
    with pytest.raises(ParseError) as info:
        parse(text)
    error = info.value
    assert (error.position, error.text) == (position, text)
    message = str(error)
    assert error.reason in message and "column" in message and message.endswith("^")
    assert len(message) < 400  # one short paragraph, whatever the input size


def test_the_hostile_list_is_long():
    assert len(HOSTILE) >= 40


def test_deep_chains_parse_at_the_default_recursion_limit():
    assert sys.getrecursionlimit() == 1000  # nothing raised it: the parser does not recurse
    node = parse("exp(" * N + "x" + ")" * N)
    for _ in range(N):
        assert node.op == "exp"
        node = node.args[0]
    assert node is x
    assert parse("-(" * N + "x" + ")" * N) is x  # an even number of minus signs
    node = parse("**".join(["x"] * N))
    for _ in range(N - 1):
        assert node.op == "pow" and node.args[0] is x
        node = node.args[1]
    assert node is x


def test_gc_is_enabled_again_after_success_and_failure():
    assert gc.isenabled()
    parse("x + 1")
    with pytest.raises(ParseError):
        parse("x +")
    assert gc.isenabled()


@pytest.mark.parametrize("value", [None, b"x", 1, ["x"]])
def test_non_string_input_is_a_type_error(value):
    with pytest.raises(TypeError):
        parse(value)


ALPHABET = list("xyz019.e_+-*/^()<>=!, \t\nsinlogmaxwhere") + ["**", "\0", "é", "θ", "0x"]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(st.sampled_from(ALPHABET), max_size=30).map("".join),
                 st.text(max_size=20)))
def test_no_exception_but_parse_error_escapes(text):
    try:
        result = parse(text)
    except ParseError as error:
        assert 0 <= error.position <= len(text)
    else:
        assert isinstance(result, Node)


# -- messages ---------------------------------------------------------------------------------

def test_error_message_has_column_line_and_caret():
    with pytest.raises(ParseError) as info:
        parse("x + foo(y)")
    error = info.value
    assert isinstance(error, ValueError)
    assert (error.position, error.reason) == (4, "unknown function 'foo'")
    assert str(error) == "unknown function 'foo' at column 5:\n    x + foo(y)\n        ^"


def test_error_message_names_the_line_of_multiline_input():
    with pytest.raises(ParseError) as info:
        parse("x +\n  * y")
    assert str(info.value) == ("expected an expression before '*' at line 2, column 3:\n"
                               "      * y\n      ^")


def test_error_message_shows_a_window_of_a_long_line_with_the_caret_under_the_spot():
    text = "x + " * 100 + "foo(x)" + " + y" * 100
    with pytest.raises(ParseError) as info:
        parse(text)
    _, shown, caret = str(info.value).split("\n")
    assert len(shown) <= 4 + 80 and shown.startswith("    ...") and shown.endswith("...")
    assert shown[caret.index("^"):].startswith("foo(x)")
    assert "column 401" in str(info.value)


def test_error_message_marks_the_end_of_input():
    with pytest.raises(ParseError) as info:
        parse("sin(x) +")
    assert str(info.value).endswith("    sin(x) +\n            ^")


def test_unclosed_and_unexpected_parentheses_are_named():
    with pytest.raises(ParseError, match=r"'\(' of 'sin\(' is never closed") as info:
        parse("1 + sin(cos(x)")
    assert info.value.position == 7
    with pytest.raises(ParseError, match=r"unmatched '\)'"):
        parse("(x))")
