"""Every entry of the op table is complete everywhere: code templates (lanes too where the op is
lane-capable), LaTeX, SymPy both ways, a domain, a derivative rule (against SymPy), a parser
spelling (``parse(print(node)) is node``), and kernels in the Python backend, Numba rows, Numba
lanes and the tape. A new op that forgets one of its forms fails here, by name.

`test_ops.py` checks each form's numbers against `evaluate`; this file checks that the stages
*reach* every op through the table (no stage keeps its own list that a new op could miss).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import find, settings

import symgraph as sg
from symgraph.backends.numba import emit as emit_numba
from symgraph.backends.numba import vecmath
from symgraph.backends.numba.batch import is_vector_step, lane_kernel_lines, vecmath_calls
from symgraph.backends.registry import render_source
from symgraph.frontends.sympy_bridge import from_sympy, to_sympy
from symgraph.ir.evaluate import evaluate
from symgraph.ir.node import apply, symbol
from symgraph.ir.ops import CALLS, COMPARISONS, OPS, having
from symgraph.lower.programs import build_programs
from symgraph.runtime.loading import load_source

from .strategies import NONSMOOTH_OPS, SMOOTH_OPS, expressions

NAMES = sorted(OPS)
FRACTIONS = (0.17, 0.58, 0.83)  # of each domain: off its middle (kinks sit at 0), no ties


def arity(spec) -> int:
    return 2 if spec.arity < 0 else spec.arity


def point(spec, j: int = 0) -> tuple[float, ...]:
    """A point inside the op's domain whose coordinates differ (min/max/eq never tie); an
    integer argument (an order) is rounded."""
    values = [lo + (hi - lo) * FRACTIONS[(i + j) % 3]
              for i, (lo, hi) in enumerate(spec.domain[min(i, len(spec.domain) - 1)]
                                           for i in range(arity(spec)))]
    return tuple(float(round(v)) if i in spec.integer_arguments else v
                 for i, v in enumerate(values))


def example(name: str, prefix: str = "a") -> tuple:
    """The op applied to fresh symbols (`where` on a comparison, as it is used)."""
    spec = OPS[name]
    args = [symbol(f"{prefix}{i}") for i in range(arity(spec))]
    if name == "where":
        return apply(name, apply("lt", args[0], 0.5), args[1], args[2]), args
    return apply(name, *args), args


def at(args, values) -> dict[str, float]:
    return {a.name: v for a, v in zip(args, values)}


def sympy_value(expr, syms, values) -> float:
    value = expr.subs(dict(zip(syms, map(sp.Float, values))))
    return float(sp.N(value, 30))


# -- forms ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_entry_has_a_domain_templates_and_a_title(name):
    spec = OPS[name]
    assert spec.name == name and spec.title and spec.cost >= 1
    assert len(spec.domain) >= arity(spec) and all(lo < hi for lo, hi in spec.domain)
    names = [f"a{i}" for i in range(arity(spec))]
    for backend in ("py", "np", "nb", "lanes"):
        code = spec.render(backend, names)
        assert all(v in code for v in names) and "{" not in code, (backend, code)
        literal = spec.render(backend, [repr(float(v)) for v in point(spec)])
        assert "a0" not in literal, (backend, literal)
    lanes = spec.render("lanes", names)
    if spec.lanes is not None:  # a vecmath form: calls only vecmath's public functions
        assert vecmath_calls(lanes) and set(vecmath_calls(lanes)) <= set(vecmath.PUBLIC)
    else:
        # the `nb` template: libm, or a vecmath function that is no vector form (vcbrt)
        assert lanes == spec.render("nb", names)
        assert set(vecmath_calls(lanes)) <= set(vecmath.PUBLIC) - {"vsin", "vcos"}


@pytest.mark.parametrize("name", NAMES)
def test_latex_and_text_print_and_the_text_parses_back(name):
    node, args = example(name)
    tex = sg.to_latex(node)
    assert tex.count("{") == tex.count("}") and "\0" not in tex
    assert all(sg.to_latex(a) in tex for a in args), tex
    assert sg.parse(sg.to_text(node, tidy=False)) is node, sg.to_text(node, tidy=False)


@pytest.mark.parametrize("name", NAMES)
def test_every_spelling_parses_to_the_op(name):
    spec = OPS[name]
    node, args = example(name)
    if spec.infix is None:  # infix ops are read by their symbol; the printer test covers them
        assert spec.spellings and spec.call_name == spec.spellings[0]
    for spelling in spec.spellings:
        assert CALLS[spelling] == name
        text = f"{spelling}({', '.join(sg.to_text(a) for a in node.args)})"
        assert sg.parse(text) is node, text


@pytest.mark.parametrize("name", NAMES)
def test_sympy_round_trip(name):
    spec = OPS[name]
    node, args = example(name)
    back = from_sympy(to_sympy(node))
    if spec.sympy_names or name in COMPARISONS or name == "where":
        assert back is node, (name, back)  # SymPy has the function: it maps back to the op
        for cls_name in spec.sympy_names:
            cls = getattr(sp, cls_name)
            assert isinstance(cls, type)
            syms = [sp.Symbol(a.name, real=True) for a in args]
            assert from_sympy(cls(*syms[:arity(spec)])).op == name, cls_name
    else:  # SymPy writes its expansion (1/(1 + exp(-x))): equal values, not the same node
        for j in range(3):
            env = at(args, point(spec, j))
            assert math.isclose(float(evaluate(back, env)), float(evaluate(node, env)),
                                rel_tol=1e-13, abs_tol=1e-15)


@pytest.mark.parametrize("name", NAMES)
def test_derivative_matches_sympy(name):
    spec = OPS[name]
    node, args = example(name)
    gradient = sg.grad(node, args)
    syms = [sp.Symbol(a.name, real=True) for a in args]
    expr = to_sympy(node, {a.name: s for a, s in zip(args, syms)})
    for j in range(3):
        values = point(spec, j)
        ours = [float(evaluate(g, at(args, values))) for g in gradient]
        for k, s in enumerate(syms):
            derivative = sp.diff(expr, s)
            if k in spec.integer_arguments:  # an order: no derivative in it (None, zero)
                assert ours[k] == 0.0
                continue
            if derivative.has(sp.Derivative):  # SymPy leaves floor'/ceil' undefined
                assert name in NONSMOOTH_OPS and ours[k] == 0.0
                continue
            assert math.isclose(ours[k], sympy_value(derivative, syms, values),
                                rel_tol=1e-9, abs_tol=1e-12), (name, k, values)


@pytest.mark.parametrize("name", NAMES)
def test_traits_are_consistent(name):
    spec = OPS[name]
    if spec.comparison:  # a mask: derivative zero, an infix relation, not smooth
        node, _ = example(name)
        assert spec.partials(node.args, node) == (None, None)
        assert spec.infix and not spec.smooth
    assert (name in SMOOTH_OPS) == spec.smooth
    if spec.folds:
        assert spec.arity == 2 and spec.spellings
    if spec.vectorises:  # lane loops take the row template as is: no vecmath form needed
        assert spec.lanes is None
    if spec.integer_powers:  # small literal powers are products in every backend
        assert spec.render("nb", ["a0", "3.0"]) == "a0 * a0 * a0"
        assert spec.render("lanes", ["a0", "3.0"]) == "a0 * a0 * a0"
        # other powers join lanes only through a vecmath form (vpow)
        assert spec.lane_step(3.0) and spec.lane_step(None) == spec.lane_step(0.5) == (
            spec.lanes is not None)


@pytest.mark.parametrize("name", NAMES)
def test_the_shared_strategy_draws_the_op(name):
    # strategies.expressions builds each op from its arity and domain alone.
    node = find(expressions(ops=[name], max_depth=1), lambda n: n.op == name,
                settings=settings(database=None, max_examples=200))
    assert node.op == name


# -- kernels ---------------------------------------------------------------------------------


def every_op() -> tuple[list, list, list[tuple]]:
    """One output per op, each on its own inputs, and a point inside every op's domain."""
    outputs, inputs, values = [], [], []
    for name in NAMES:
        node, args = example(name, prefix=f"{name}_")
        outputs.append(node)
        inputs += args
        values += point(OPS[name])
    return outputs, inputs, values


def reference(outputs, inputs, values) -> tuple[np.ndarray, np.ndarray]:
    env = at(inputs, values)
    jacobian = sg.jacobian(outputs, inputs)
    return (np.array([float(evaluate(o, env)) for o in outputs]),
            np.array([[float(evaluate(d, env)) for d in row] for row in jacobian]))


@pytest.fixture(scope="module")
def built():
    outputs, inputs, values = every_op()
    return outputs, inputs, values, *reference(outputs, inputs, values)


@pytest.mark.parametrize("backend, strategy", [("python", "auto"), ("numba", "straight"),
                                               ("numba", "tape")])
def test_every_op_runs_in_each_backend(built, backend, strategy):
    outputs, inputs, values, want, want_jacobian = built
    fn = sg.compile(outputs, inputs, backend=backend, strategy=strategy)
    np.testing.assert_allclose(fn(*values), want, rtol=1e-14, atol=0)
    np.testing.assert_allclose(fn.jacobian(*values), want_jacobian, rtol=1e-13, atol=1e-15)
    X = np.array([values, values])
    np.testing.assert_allclose(fn(X), np.array([want, want]), rtol=1e-14, atol=0)


def test_every_lane_capable_op_runs_in_lane_kernels(built, monkeypatch):
    # Lane kernels for every program (whatever its size), against `evaluate`; each op's step
    # is in a vector segment (pow with a small literal exponent: products).
    monkeypatch.setattr(emit_numba, "batch_kernel_lines", lane_kernel_lines)
    outputs, inputs, values, _, _ = built
    chosen = [o for o, name in zip(outputs, NAMES)
              if OPS[name].vectorises or OPS[name].lanes is not None]
    base = symbol("pow_0")
    chosen.append(apply("pow", base, 3.0))
    assert {o.op for o in chosen} == set(having("vectorises")) | set(
        having("lanes")) | set(having("integer_powers"))
    programs = build_programs(chosen, inputs, inputs, False, False)
    value = programs[0]
    assert all(is_vector_step(s) for s in value.steps)  # one vector segment
    module, _ = load_source(render_source(programs, chosen, inputs, "numba"))
    env = at(inputs, values)
    want = np.array([float(evaluate(o, env)) for o in chosen])
    X = np.tile(np.array(values), (37, 1))
    out = np.empty((37, len(chosen)))
    getattr(module, value.name + "_batch")(X, out)
    np.testing.assert_allclose(out, np.tile(want, (37, 1)), rtol=1e-15, atol=0)
