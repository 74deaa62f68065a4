"""Adding an op is one table entry: `ops.register(OpSpec(...))` of ``cube(x) = x**3`` reaches
parse, print (text and LaTeX), SymPy both ways, derivatives (against SymPy), the Python backend
(rows and batches), Numba rows and lanes, and the graph tensors, with cache keys that change
with the table. (The tape runs registered ops on an interpreter generated for the extended
table: tests/test_tape_table.py.) The fixture removes it again, so other tests see the built-in
table.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import symgraph as sg
from symgraph.backends.numba import emit as emit_numba
from symgraph.backends.numba.batch import lane_kernel_lines
from symgraph.backends.registry import render_source
from symgraph.frontends.sympy_bridge import from_sympy, to_sympy
from symgraph.graphs import tensor
from symgraph.ir import ops
from symgraph.ir.evaluate import evaluate
from symgraph.ir.ops import OPS, OpSpec
from symgraph.lower.programs import build_programs
from symgraph.runtime.expression_cache import expression_key
from symgraph.runtime.loading import load_source


def cube_spec(shift: float = 0.0) -> OpSpec:
    """``x**3 + shift``: arithmetic only, so lane loops vectorise it with no vecmath form."""
    tail = "" if shift == 0.0 else f" + {shift!r}"
    return OpSpec(
        name="cube", arity=1,
        evaluate=lambda x: x * x * x + shift,
        partials=lambda a, out: (3.0 * a[0] * a[0],),
        py="{0} * {0} * {0}" + tail,
        latex="{{{0}}}^{{3}}" + tail,
        sympy=lambda sp_, x: x**3 + sp_.Float(shift) if shift else x**3,
        domain=((-3.0, 3.0),), vectorises=True, title="Cube", spellings=("cube", "cubed"))


@pytest.fixture
def cube():
    before = (dict(OPS), dict(ops.CALLS), ops.table_digest())
    spec = ops.register(cube_spec())
    yield spec
    ops.unregister("cube")
    assert (dict(OPS), dict(ops.CALLS), ops.table_digest()) == before


X = np.array([-2.5, -1.0, -0.0, 0.5, 1.7, 3.0])


def test_parse_and_print(cube):
    x = sg.symbol("x")
    node = sg.parse("cube(x) + cubed(2*x)")
    assert {a.op for a in node.args} == {"cube"}
    assert sg.to_text(sg.parse("cube(x)")) == "cube(x)"
    assert sg.parse(sg.to_text(node, tidy=False)) is node
    assert sg.to_latex(sg.apply("cube", x + 1)) == r"{\left(x + 1\right)}^{3}"
    assert sg.to_latex(sg.apply("cube", x)) == "{x}^{3}"


def test_sympy_both_ways_and_the_derivative(cube):
    x = sg.symbol("x")
    node = sg.apply("cube", sg.sin(x))
    s = sp.Symbol("x", real=True)
    expr = to_sympy(node)
    assert sp.simplify(expr - sp.sin(s) ** 3) == 0
    back = from_sympy(expr)  # SymPy has no cube: its expansion comes back, equal in value
    for v in X:
        assert float(evaluate(back, {"x": v})) == pytest.approx(np.sin(v) ** 3, rel=1e-14)
    derivative = sg.diff(node, x)
    exact = sp.diff(sp.sin(s) ** 3, s)
    for v in X:
        assert float(evaluate(derivative, {"x": v})) == pytest.approx(
            float(exact.subs(s, v)), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_kernels_rows_and_batches(cube, backend):
    x, y = sg.symbols("x y")
    fn = sg.compile(sg.apply("cube", x * y) + y, [x, y], backend=backend)
    for v in X:
        value, grad = fn.value_and_grad(v, 1.5)
        assert value == pytest.approx((1.5 * v) ** 3 + 1.5, rel=1e-15)
        assert grad == pytest.approx([3 * 1.5 * (1.5 * v) ** 2, 3 * v * (1.5 * v) ** 2 + 1])
    points = np.c_[X, np.full_like(X, 1.5)]
    values, grads = fn.value_and_grad(points)
    assert values == pytest.approx((1.5 * X) ** 3 + 1.5, rel=1e-15)
    assert grads.shape == (len(X), 2)


def test_numba_lanes(cube, monkeypatch):
    monkeypatch.setattr(emit_numba, "batch_kernel_lines", lane_kernel_lines)
    x = sg.symbol("x")
    expr = sg.apply("cube", x) + sg.apply("cube", x + 1.0)
    programs = build_programs([expr], [x], [x], True, False)
    lines = "\n".join(lane_kernel_lines(programs[0]))
    assert "t1 * t1 * t1" in lines  # the template inlined in the lane loop
    module, _ = load_source(render_source(programs, [expr], [x], "numba"))
    out = np.empty((len(X), 1))
    module.value_batch(X[:, None].copy(), out)
    np.testing.assert_array_equal(out[:, 0], X**3 + (X + 1.0) ** 3)


def test_graph_tensors_have_it(cube):
    from symgraph import dynamic, static

    t = tensor.function_of("cube")(tensor.symbolic("t", (2,)))
    assert [n.op for n in t.flat_nodes()] == ["cube", "cube"]
    assert static.cube is not None
    assert np.allclose(dynamic.cube(dynamic.tensor([1.0, 2.0])).numpy(), [1.0, 8.0])


def test_cache_keys_and_sources_follow_the_table(tmp_path):
    x = sg.symbol("x")
    ops.register(cube_spec())
    try:
        node = sg.apply("cube", x)
        first_key, first_digest = expression_key([node], [x], [x]), ops.table_digest()
        fn = sg.compile(node, [x], cache_dir=tmp_path)
        assert fn(2.0) == 8.0
    finally:
        ops.unregister("cube")
    ops.register(cube_spec(shift=1.0))  # the same name, another meaning
    try:
        node = sg.apply("cube", x)  # the same structure (and node digest) as before
        assert ops.table_digest() != first_digest
        assert expression_key([node], [x], [x]) != first_key
        fn = sg.compile(node, [x], cache_dir=tmp_path)  # the first one's record must not load
        assert fn(2.0) == 9.0 and fn.grad(2.0) == pytest.approx([12.0])
    finally:
        ops.unregister("cube")


def test_register_refuses_clashes_and_unregister_keeps_builtins(cube):
    with pytest.raises(ValueError, match="exists"):
        ops.register(cube_spec())
    spec = cube_spec()
    for bad in (dict(name="sin2", spellings=("ln",)), dict(name="pi"), dict(name="const"),
                dict(name="cube2", arity=0), dict(name="cube2", arity=2)):
        fields = {**{f: getattr(spec, f) for f in spec.__dataclass_fields__}, "spellings": None,
                  **bad}
        with pytest.raises(ValueError):
            ops.register(OpSpec(**fields))
    with pytest.raises(ValueError, match="built-in"):
        ops.unregister("sin")
    with pytest.raises(ValueError, match="no registered op"):
        ops.unregister("cube3")
