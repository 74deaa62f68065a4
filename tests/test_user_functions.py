"""User-defined functions (symgraph.define_function): one declaration, then text, printing,
SymPy both ways, derivatives of every order, every backend and strategy, the CLI (--define),
cache keys that follow the implementation; and undefined functions (f_1 notation, a clear
error when compiled).
"""

from __future__ import annotations

import json
import math
import textwrap

import numpy as np
import pytest
import sympy as sp
from numba import njit

import symgraph as sg
from symgraph.cli.main import main
from symgraph.frontends.sympy_bridge import from_sympy, to_sympy
from symgraph.frontends.userfunctions import implementation
from symgraph.ir.evaluate import evaluate
from symgraph.ir.ops import table_digest


@njit(error_model="numpy")
def _softclip(x, c):
    return c * math.tanh(x / c)


SOFTCLIP_PARTIALS = ["1 - (softclip(x, c) / c)**2",
                     "softclip(x, c) / c - x / c * (1 - (softclip(x, c) / c)**2)"]
TEXT = "softclip(x*y, 2) + softclip(x, y) * y"
POINT = (0.7, 1.3)


@pytest.fixture(scope="module")
def softclip():
    # python= too: the Python backend and evaluate() then compile nothing (the fast tier);
    # Numba kernels and the tape call the @njit one.
    f = sg.define_function("softclip", ("x", "c"), numba=_softclip,
                           python=lambda x, c: c * math.tanh(x / c),
                           partials=SOFTCLIP_PARTIALS, domain=[(-2.0, 2.0), (0.5, 3.0)])
    yield f
    sg.remove_function("softclip")


def reference(x: float, y: float) -> float:
    return 2.0 * math.tanh(x * y / 2.0) + y * y * math.tanh(x / y)


def finite_gradient(f, p, h=1e-6):
    p = np.asarray(p, float)
    return np.array([(f(*(p + h * e)) - f(*(p - h * e))) / (2 * h) for e in np.eye(len(p))])


def finite_hessian(f, p, h=1e-4):
    p = np.asarray(p, float)
    return np.array([(finite_gradient(f, p + h * e) - finite_gradient(f, p - h * e)) / (2 * h)
                     for e in np.eye(len(p))])


@pytest.mark.parametrize("backend, strategy", [("python", "auto"), ("numba", "straight"),
                                               ("numba", "tape")])
def test_value_gradient_and_hessian_match_finite_differences(softclip, backend, strategy):
    fn = sg.compile(sg.parse(TEXT), ["x", "y"], backend=backend, strategy=strategy)
    assert math.isclose(fn(*POINT), reference(*POINT), rel_tol=1e-14)
    np.testing.assert_allclose(fn.grad(*POINT), finite_gradient(reference, POINT), rtol=1e-8)
    np.testing.assert_allclose(fn.hessian(*POINT), finite_hessian(reference, POINT), rtol=1e-5)
    X = np.random.default_rng(0).uniform(0.2, 2.0, (50, 2))  # a batch: the vector path
    np.testing.assert_allclose(fn(X), [reference(*p) for p in X], rtol=1e-13)


def test_it_parses_prints_and_round_trips_through_sympy(softclip):
    node = sg.parse(TEXT)
    assert sg.parse(sg.to_text(node)) is node
    assert r"\operatorname{softclip}" in sg.to_latex(node)
    expr = to_sympy(node)
    assert isinstance(expr.atoms(sp.Function).pop(), sp.Function)
    x, y = sp.symbols("x y", real=True)
    back = from_sympy(sp.Function("softclip")(x * y, 2) + sp.Function("softclip")(x, y) * y)
    at = dict(zip("xy", POINT))
    assert math.isclose(float(evaluate(back, at)), reference(*POINT), rel_tol=1e-14)
    assert from_sympy(expr) is node


def test_partials_may_call_the_function_so_every_order_exists(softclip):
    node, x = sg.parse("softclip(x, 1.5)"), sg.symbol("x")
    d = node
    for order in range(1, 4):  # tanh's derivatives, through softclip itself
        d = sg.diff(d, x)
        t = sp.Symbol("t", real=True)
        want = float(sp.diff(1.5 * sp.tanh(t / 1.5), t, order).subs(t, 0.4))
        assert math.isclose(float(evaluate(d, {"x": 0.4})), want, rel_tol=1e-12), order


def test_the_cli_reads_user_functions_from_a_define_module(softclip, tmp_path, capsys):
    module = tmp_path / "mydefs.py"
    module.write_text(textwrap.dedent('''
        import math
        import symgraph as sg

        sg.define_function("halfsq", 1, python=lambda x: 0.5 * x * x, partials=["x"])
    '''))
    try:
        assert main(["grad", "halfsq(x) + softclip(x, 2)", "--at", "x=0.5", "--json",
                     "--define", str(module)]) == 0
        out = json.loads(capsys.readouterr().out)
        text = json.dumps(out)
        value, slope = 0.125 + 2 * math.tanh(0.25), 0.5 + 1 - math.tanh(0.25) ** 2
        assert repr(value)[:12] in text and repr(slope)[:12] in text, text
        assert main(["diff", "halfsq(x)**2", "--wrt", "x", "--define", str(module)]) == 0
        assert "halfsq(x)" in capsys.readouterr().out
    finally:
        sg.remove_function("halfsq")
    assert main(["diff", "x", "--define", str(tmp_path / "no.py")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_an_edited_implementation_is_new_code_with_a_new_cache_key():
    sg.define_function("bump", 1, python=lambda x: x + 1.0, partials=[lambda x: 1.0])
    try:
        before, fn = table_digest(), sg.compile("bump(x)", ["x"], backend="python")
        assert fn(1.0) == 2.0
        sg.define_function("bump", 1, python=lambda x: x + 2.0, partials=[lambda x: 1.0],
                           replace=True)
        assert table_digest() != before
        assert sg.compile("bump(x)", ["x"], backend="python")(1.0) == 3.0
        with pytest.raises(LookupError, match="another definition"):
            implementation("bump", "python", "0" * 16)  # an old module's digest
    finally:
        sg.remove_function("bump")


def test_declarations_are_checked():
    with pytest.raises(ValueError, match="op of symgraph"):
        sg.define_function("sin", 1, python=math.sin, partials=["cos(x)"])
    with pytest.raises(ValueError, match="partials"):
        sg.define_function("nopartials", 1, python=math.sin)
    with pytest.raises(ValueError, match="identifier"):
        sg.define_function("two words", 1)


def test_undefined_functions_differentiate_print_and_refuse_to_compile():
    sg.undefined_function("g")
    try:
        x = sg.symbol("x")
        d = sg.diff(sg.parse("g(sin(x)) * x"), x)
        assert sg.to_text(d) == "x*g_1(sin(x))*cos(x) + g(sin(x))"
        second = sg.diff(d, x)
        assert "g_11(sin(x))" in sg.to_text(second)
        xs = sp.Symbol("x", real=True)
        g = sp.Function("g")
        assert sp.simplify(to_sympy(second, {"x": xs}) - sp.diff(g(sp.sin(xs)) * xs, xs, 2)) == 0
        assert from_sympy(sp.diff(g(xs), xs)) is sg.parse("g_1(x)")
        assert sg.parse("g(2.0)").op == "g"  # no numbers: not folded
        with pytest.raises(sg.UndefinedFunctionError, match="'g_1'|'g'"):
            sg.compile(d, ["x"], backend="python")
    finally:
        sg.remove_function("g")
    assert "g_1" not in sg.OPS


def test_the_gamma_regression_example_fits_and_agrees_with_scipy_stats(capsys):
    pytest.importorskip("scipy")
    import runpy
    from pathlib import Path

    runpy.run_path(str(Path(__file__).parent.parent / "examples" / "gamma_regression.py"))
    out = capsys.readouterr().out
    assert "converged: True" in out and "scipy.stats nll at the fit" in out
