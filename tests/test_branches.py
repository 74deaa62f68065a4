"""Branches never poison derivatives: at every point, the value, gradient, Hessian, JVP and
n-th derivatives of an expression with where / min / max / abs / relu / clip / Piecewise are
those of the branch taken there, however singular the untaken side is (sqrt, log, division,
acos, atanh, powers out of their domain, overflowing exp).

The oracle is the taken branch alone: `resolve` replaces every branch by the side taken at the
point (min/max/abs/relu by the argument they pass on, comparisons by their 0/1, with the
documented conventions at ties), and SymPy differentiates what is left. Random expressions
(hypothesis) run symbolically and in the Python backend; the Numba strategies (row kernels,
lane batches, the tape, Dask chunks) each compile one expression that holds every kind of
singular branch, checked at many points on both sides of every condition.
"""

from __future__ import annotations

import functools
import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import symgraph as sg
import symgraph.dynamic as dyn
import symgraph.static as tf
from symgraph.frontends.sympy_bridge import from_sympy, to_sympy
from symgraph.ir.node import Node, apply, const
from symgraph.ir.ops import COMPARISONS, OPS
from symgraph.ir.traversal import topological_order

from .strategies import SMOOTH_OPS, expressions

X, Y = sg.symbols("x y")
XY = [X, Y]

# -- the oracle: the taken branch alone ------------------------------------------------------


def resolve(expr: Node, at: dict[str, float]) -> Node:
    """`expr` with every branch replaced by the side taken at `at` (conventions at ties:
    abs'(0) = relu'(0) = 0, min/max pass a tie to their first argument)."""
    value: dict[Node, float] = {}
    taken: dict[Node, Node] = {}
    with np.errstate(all="ignore"):
        for node in topological_order([expr]):
            if node.is_symbol:
                value[node], taken[node] = np.float64(at[node.name]), node
                continue
            if node.is_const:
                value[node], taken[node] = np.float64(node.value), node
                continue
            v = [value[a] for a in node.args]
            r = [taken[a] for a in node.args]
            value[node] = out = np.float64(OPS[node.op].evaluate(*v))
            op = node.op
            if op in COMPARISONS or op in ("sign", "floor", "ceil"):
                taken[node] = const(float(out))
            elif op == "where":
                taken[node] = r[1] if v[0] != 0.0 else r[2]  # nan is true, as in `where`
            elif op in ("min", "max"):
                first = v[0] <= v[1] if op == "min" else v[0] >= v[1]
                taken[node] = r[0] if first or v[0] != v[0] else r[1]
            elif op == "relu":
                taken[node] = r[0] if v[0] > 0.0 else const(0.0)
            elif op == "abs":
                taken[node] = r[0] if v[0] > 0 else apply("neg", r[0]) if v[0] < 0 else const(0.0)
            else:
                taken[node] = apply(op, *r)
    return taken[expr]


@functools.cache
def _taken_functions(branch: Node, names: tuple[str, ...]) -> list:
    """The taken branch's value, gradient and Hessian entries as mpmath functions."""
    f = to_sympy(branch)
    syms = [sp.Symbol(n, real=True) for n in names]  # to_sympy's symbols are real
    assert f.free_symbols <= set(syms)
    grads = [sp.diff(f, s) for s in syms]
    entries = [f, *grads, *[sp.diff(g, t) for g in grads for t in syms]]
    # SymPy may write sqrt(u*u) as Abs(u): its second derivative is DiracDelta, 0 off zero.
    delta = {"DiracDelta": lambda u, *order: 0 if u != 0 else math.nan}
    return [sp.lambdify(syms, e, modules=[delta, "mpmath"]) for e in entries]


def _number(function, args) -> float:
    try:
        c = complex(function(*args))
    except (ZeroDivisionError, ValueError, TypeError, OverflowError):  # not a finite real
        return math.nan
    return c.real if c.imag == 0.0 else math.nan


@functools.cache
def _branch_alone(branch: Node, variables: tuple[Node, ...]) -> list[Node]:
    """symgraph's own value, gradient and Hessian of a branch-free expression."""
    return [branch, *sg.grad(branch, list(variables)),
            *[h for row in sg.hessian(branch, list(variables)) for h in row]]


def oracle(pieces, variables: list[Node], at: dict[str, float]):
    """(value, gradient, Hessian) at `at` of the branches `pieces` (a sum's terms, or one
    expression) take there, by SymPy and mpmath at 30 digits. An entry is nan where the
    taken branch is not finite on its own, in SymPy or in symgraph without any branch
    (SymPy writes sqrt(u)*u as u**1.5, whose derivative at 0 is finite; the product rule's
    is 0 * inf): what the branch itself gives there is honest."""
    names = tuple(v.name for v in variables)
    k = len(names)
    total = np.zeros(1 + k + k * k)
    env = {v: at[v.name] for v in variables}
    with mpmath.workdps(30), np.errstate(all="ignore"):
        args = [mpmath.mpf(at[n]) for n in names]
        for piece in [pieces] if isinstance(pieces, Node) else pieces:
            branch = resolve(piece, at)
            total += [_number(f, args) for f in _taken_functions(branch, names)]
            alone = np.array([sg.evaluate(d, env) for d in _branch_alone(branch, tuple(variables))],
                             dtype=float)
            total[~np.isfinite(alone)] = math.nan
    return total[0], total[1:1 + k], total[1 + k:].reshape(k, k)


def assert_taken(got, expected, what: str) -> None:
    """Equal to the taken branch wherever that is finite (its own inf/nan is honest)."""
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    finite = np.isfinite(expected)
    scale = np.maximum(1.0, np.abs(expected[finite]))
    assert np.all(np.isfinite(got[finite])), (what, got, expected)
    assert np.all(np.abs(got[finite] - expected[finite]) <= 1e-8 * scale), (what, got, expected)


# -- random expressions with singular untaken branches --------------------------------------


def _singular(kind: str, u: Node) -> tuple[Node, Node]:
    """(a branch singular where the condition is false, the condition)."""
    if kind == "sqrt":
        return sg.sqrt(u), u > 0
    if kind == "log":
        return sg.log(u), u > 0
    if kind == "xlogx":
        return u * sg.log(u), u > 0
    if kind == "div":
        return sg.sin(u) / u, sg.ne(u, 0.0)
    if kind == "acos":
        return sg.acos(u), abs(u) < 1.0
    if kind == "atanh":
        return sg.atanh(u), abs(u) < 1.0
    if kind == "pow":
        return u**1.5 + u**-0.5, u > 0
    if kind == "exp":  # softplus(1000 u) / 1000: exp overflows to inf where u > 0.71
        return sg.log(1.0 + sg.exp(1000.0 * u)) / 1000.0, 1000.0 * u < 30.0
    raise ValueError(kind)


KINDS = ("sqrt", "log", "xlogx", "div", "acos", "atanh", "pow", "exp")
SHAPES = ("where", "flipped", "nested", "relu", "clip", "min")


def well_conditioned(us: list[Node], at: dict[str, float]) -> bool:
    """Whether every guarded argument sits on a boundary (0, +-1) or clearly off it: close
    to its singularity a taken branch loses digits to rounding (sin(u)/u at u = 1e-8), which
    no guard is about."""
    env = {X: at["x"], Y: at["y"]}
    with np.errstate(all="ignore"):
        values = [float(sg.evaluate(u, env)) for u in us]
    return all(gap == 0.0 or gap > 1e-2 for v in values for gap in (abs(v), abs(abs(v) - 1.0)))


def _piece(kind: str, shape: str, u: Node, other: Node) -> Node:
    branch, condition = _singular(kind, u)
    if shape == "where":
        return sg.where(condition, branch, other)
    if shape == "flipped":  # the singular side second: where(not c, other, branch)
        return sg.where(sg.eq(condition, 0.0), other, branch)
    if shape == "nested":  # singular on both inner sides, each guarded by its own condition
        inner, inner_condition = _singular(kind, -u)
        return sg.where(condition, branch, sg.where(inner_condition, inner, other))
    if shape == "relu":  # sqrt(relu(u)): sqrt'(0) = inf meets relu's switched-off side
        return sg.sqrt(sg.relu(u)) + sg.log(sg.max(u, 0.5))
    if shape == "clip":
        return sg.sqrt(np.clip(u, 0.0, 2.0)) * other  # min(max(u, 0), 2)
    if shape == "min":  # 1/u is inf at u = 0, where min passes the other side on
        return sg.min(1.0 / u, 5.0) + sg.max(-5.0, sg.log(abs(u)))
    raise ValueError(shape)


_SMOOTH = [op for op in SMOOTH_OPS if op not in ("pow",)]  # keep the branches' sizes modest


@st.composite
def branchy(draw, variables=("x", "y")):
    """A sum of one to three guarded pieces over smooth random subexpressions, the pieces,
    and their guarded arguments."""
    pieces, us = [], []
    for _ in range(draw(st.integers(1, 3))):
        u = draw(expressions(variables, max_depth=2, ops=_SMOOTH))
        other = draw(expressions(variables, max_depth=1, ops=_SMOOTH))
        pieces.append(_piece(draw(st.sampled_from(KINDS)), draw(st.sampled_from(SHAPES)), u,
                             other))
        us.append(u)
    return sg.add(*pieces), pieces, us


def _draw_point(draw) -> dict[str, float]:
    # Zeros and +-1 sit on the conditions' boundaries; hypothesis tries them early.
    value = st.one_of(st.sampled_from([0.0, -1.0, 1.0, 2.0, -2.0]),
                      st.floats(-2.0, 2.0, allow_nan=False, allow_subnormal=False))
    return {"x": draw(value), "y": draw(value)}


POINT = st.composite(lambda draw: _draw_point(draw))()
# No shrinking: a failure prints its example as drawn; shrinking these takes minutes.
FEW = settings(max_examples=15, deadline=None, derandomize=True,
               phases=(Phase.explicit, Phase.generate),
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@FEW
@given(branchy(), POINT)
def test_symbolic_derivatives_of_random_branches_follow_the_taken_branch(drawn, at):
    expr, pieces, us = drawn
    assume(well_conditioned(us, at))
    value, gradient, hessian = oracle(pieces, XY, at)
    env = {X: at["x"], Y: at["y"]}
    with np.errstate(all="ignore"):
        assert_taken(sg.evaluate(expr, env), value, "value")
        assert_taken([sg.evaluate(g, env) for g in sg.grad(expr, XY)], gradient, "grad")
        assert_taken([[sg.evaluate(h, env) for h in row] for row in sg.hessian(expr, XY)],
                     hessian, "hessian")
        assert_taken(sg.evaluate(sg.diff(expr, X, 2), env), hessian[0, 0], "diff(f, x, 2)")
        direction = [0.75, -1.25]
        tangent = sg.evaluate(sg.jvp([expr], XY, direction)[0], env)
        assert_taken(tangent, gradient @ direction if np.all(np.isfinite(gradient)) else np.nan,
                     "jvp")


@settings(FEW, max_examples=5)
@given(branchy(), st.lists(POINT, min_size=4, max_size=6))
def test_python_backend_points_and_batches_of_random_branches_follow_the_taken_branch(
        drawn, points):
    expr, pieces, us = drawn
    fn = sg.compile(expr, XY, backend="python", hessian=True)
    batch = np.array([[p["x"], p["y"]] for p in points])
    values, gradients = fn.value_and_grad(batch)
    hessians = fn.hessian(batch)
    for i, at in enumerate(points):
        if not well_conditioned(us, at):
            continue
        value, gradient, hessian = oracle(pieces, XY, at)
        v, g = fn.value_and_grad(at["x"], at["y"])
        assert_taken(v, value, "value")
        assert_taken(g, gradient, "grad")
        assert_taken(fn.hessian(at["x"], at["y"]), hessian, "hessian")
        assert_taken(values[i], value, "batch value")
        assert_taken(gradients[i], gradient, "batch grad")
        assert_taken(hessians[i], hessian, "batch hessian")


# -- every kind in one Numba compile per strategy ---------------------------------------------


def _every_kind() -> list[Node]:
    """Each kind once (as where, flipped or nested in turn) and each kind-free shape once,
    over varied arguments: one compile covers them. (Few pieces: Numba takes ~50 s over the
    lane kernels of four times as many.)"""
    arguments = [X, Y, X * Y - 0.5, sg.sin(X) + Y, X - Y, 0.5 * X + Y * Y - 1.0]
    pieces = []
    for i, kind in enumerate(KINDS):
        u, other = arguments[i % len(arguments)], arguments[(i + 3) % len(arguments)]
        pieces.append(_piece(kind, SHAPES[i % 3], u, other))
    for j, shape in enumerate(SHAPES[3:]):
        pieces.append(_piece("sqrt", shape, arguments[j + 2], arguments[j + 1]))
    return pieces


PIECES = _every_kind()
EVERY_KIND = sg.add(*PIECES)
# A grid through 0 and +-1 (the conditions' boundaries), with both sides of every condition.
GRID = np.array([[a, b] for a in (-2.0, -1.0, 0.0, 0.3, 1.0, 1.5)
                 for b in (-1.5, -1.0, 0.0, 0.5, 2.0)])


@pytest.fixture(scope="module")
def grid_oracle():
    return [oracle(PIECES, XY, {"x": a, "y": b}) for a, b in GRID]


def _check_grid(fn, grid_oracle, one_point_rows: int = 8) -> None:
    values, gradients = fn.value_and_grad(GRID)
    hessians = fn.hessian(GRID)
    for i, (value, gradient, hessian) in enumerate(grid_oracle):
        assert_taken(values[i], value, f"batch value at {GRID[i]}")
        assert_taken(gradients[i], gradient, f"batch grad at {GRID[i]}")
        assert_taken(hessians[i], hessian, f"batch hessian at {GRID[i]}")
    for i in range(0, len(GRID), len(GRID) // one_point_rows):
        value, gradient, hessian = grid_oracle[i]
        v, g = fn.value_and_grad(*GRID[i])
        assert_taken(v, value, f"value at {GRID[i]}")
        assert_taken(g, gradient, f"grad at {GRID[i]}")
        assert_taken(fn.hessian(*GRID[i]), hessian, f"hessian at {GRID[i]}")


def test_the_grid_meets_every_singular_branch_on_its_untaken_side():
    # The test below proves something only if untaken sides really are inf/nan on the grid.
    with np.errstate(all="ignore"):
        poisoned = 0
        for a, b in GRID:
            env = {X: a, Y: b}
            for node in topological_order([EVERY_KIND]):
                if node.op in ("sqrt", "log", "acos", "atanh", "div", "pow", "exp"):
                    if not math.isfinite(sg.evaluate(node, env)):
                        poisoned += 1
    assert poisoned > len(GRID)


@pytest.mark.parametrize("backend, strategy", [("python", "auto"), ("numba", "straight"),
                                               ("numba", "tape")])
def test_every_kind_of_singular_branch_in_each_backend_rows_and_batches(
        backend, strategy, grid_oracle):
    fn = sg.compile(EVERY_KIND, XY, backend=backend, strategy=strategy, hessian=True)
    assert strategy != "tape" or fn.strategy == "tape"
    _check_grid(fn, grid_oracle)


def test_dask_batches_of_every_kind_follow_the_taken_branch_with_numba(grid_oracle):
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    from symgraph.runtime.dask import map_dask

    fn = sg.compile(EVERY_KIND, XY, strategy="straight", hessian=True)
    chunks = da.from_array(GRID, chunks=(13, 2))
    with dask.config.set(scheduler="synchronous"):
        values, gradients = dask.compute(*map_dask(fn, chunks, "value_and_grad"))
        hessians = map_dask(fn, chunks, "hessian").compute()
    for i, (value, gradient, hessian) in enumerate(grid_oracle):
        assert_taken(values[i], value, "dask value")
        assert_taken(gradients[i], gradient, "dask grad")
        assert_taken(hessians[i], hessian, "dask hessian")


# -- the classic cases, by name ---------------------------------------------------------------
# Each: expression, variables, and (point, value, gradient, Hessian) of the taken branch.

a, b, c, d, e, g, h, k, m, n, p, q, s, t = sg.symbols("a b c d e g h k m n p q s t")
_norm = b * b + c * c
CLASSIC = {
    "guarded_sqrt": (sg.where(a > 0, sg.sqrt(a), 0.0), [a], [
        ((-1.0,), 0.0, [0.0], [[0.0]]), ((0.0,), 0.0, [0.0], [[0.0]]),
        ((4.0,), 2.0, [0.25], [[-1 / 32]])]),
    "safe_norm": (sg.where(_norm > 0, sg.sqrt(_norm), 0.0), [b, c], [
        ((0.0, 0.0), 0.0, [0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]]),
        ((3.0, 4.0), 5.0, [0.6, 0.8], [[16 / 125, -12 / 125], [-12 / 125, 9 / 125]])]),
    "sinc": (sg.where(sg.ne(d, 0.0), sg.sin(d) / d, 1.0), [d], [
        ((0.0,), 1.0, [0.0], [[0.0]]),  # the taken branch is the constant 1
        ((math.pi / 2,), 2 / math.pi, [-4 / math.pi**2],
         [[-2 / math.pi + 16 / math.pi**3]])]),
    "x_log_x": (sg.where(e > 0, e * sg.log(e), 0.0), [e], [
        ((0.0,), 0.0, [0.0], [[0.0]]), ((1.0,), 0.0, [1.0], [[1.0]])]),
    "softplus_overflow_guard": (sg.where(g > 30.0, g, sg.log(1.0 + sg.exp(g))), [g], [
        ((1000.0,), 1000.0, [1.0], [[0.0]]), ((0.0,), math.log(2.0), [0.5], [[0.25]])]),
    "huber": (sg.where(abs(h) <= 1.0, 0.5 * h * h, abs(h) - 0.5), [h], [
        ((0.5,), 0.125, [0.5], [[1.0]]), ((-3.0,), 2.5, [-1.0], [[0.0]]),
        ((3.0,), 2.5, [1.0], [[0.0]])]),
    "nested_wheres": (sg.where(k > 1.0, sg.log(k - 1.0),
                               sg.where(k < -1.0, sg.sqrt(-k - 1.0), k * k)), [k], [
        ((0.0,), 0.0, [0.0], [[2.0]]), ((2.0,), 0.0, [1.0], [[-1.0]]),
        ((-5.0,), 2.0, [-0.25], [[-1 / 32]])]),
    "piecewise_from_sympy": (
        from_sympy(sp.Piecewise((sp.log(sp.Symbol("m")), sp.Symbol("m") > 0),
                                (sp.Symbol("m"), True))), [m], [
            ((-2.0,), -2.0, [1.0], [[0.0]]), ((0.0,), 0.0, [1.0], [[0.0]]),
            ((math.e,), 1.0, [1 / math.e], [[-1 / math.e**2]])]),
    "sqrt_of_relu": (sg.sqrt(sg.relu(n)), [n], [
        ((-1.0,), 0.0, [0.0], [[0.0]]), ((4.0,), 2.0, [0.25], [[-1 / 32]])]),
    "min_of_reciprocal": (sg.min(1.0 / p, 5.0), [p], [
        ((0.0,), 5.0, [0.0], [[0.0]]), ((1.0,), 1.0, [-1.0], [[2.0]])]),
    "sqrt_of_clip": (sg.sqrt(np.clip(q, 0.0, 4.0)), [q], [
        ((-1.0,), 0.0, [0.0], [[0.0]]), ((9.0,), 2.0, [0.0], [[0.0]]),
        ((1.0,), 1.0, [0.5], [[-0.25]])]),
    "acos_guard": (sg.where(abs(s) < 1.0, sg.acos(s), 0.0), [s], [
        ((2.0,), 0.0, [0.0], [[0.0]]), ((0.0,), math.pi / 2, [-1.0], [[0.0]])]),
    "atanh_guard": (sg.where(abs(t) < 1.0, sg.atanh(t), 0.0), [t], [
        ((1.0,), 0.0, [0.0], [[0.0]]), ((0.5,), math.atanh(0.5), [4 / 3], [[16 / 9]])]),
}


def _close(got, expected) -> None:
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CLASSIC))
def test_classic_case_symbolically_and_in_the_python_backend(name):
    expr, variables, cases = CLASSIC[name]
    fn = sg.compile(expr, variables, backend="python", hessian=True)
    gradient, hessian = sg.grad(expr, variables), sg.hessian(expr, variables)
    with np.errstate(all="ignore"):
        for point, value, grad, hess in cases:
            env = dict(zip(variables, point))
            _close(sg.evaluate(expr, env), value)
            _close([sg.evaluate(d_, env) for d_ in gradient], grad)
            _close([[sg.evaluate(h_, env) for h_ in row] for row in hessian], hess)
            _close(sg.evaluate(sg.diff(expr, variables[0], 2), env), hess[0][0])
            v, g_ = fn.value_and_grad(*point)
            _close(v, value)
            _close(g_, grad)
            _close(fn.hessian(*point), hess)
        batch = np.array([case[0] for case in cases])
        values, gradients = fn.value_and_grad(batch)
        _close(values, [case[1] for case in cases])
        _close(gradients, [case[2] for case in cases])
        _close(fn.hessian(batch), [case[3] for case in cases])


def _all_classics():
    """Every classic case in one scalar function of its own variables (a block-diagonal
    Hessian), and the points: one row per case index, with each case's points cycled."""
    expr = sg.add(*[CLASSIC[name][0] for name in sorted(CLASSIC)])
    variables = [v for name in sorted(CLASSIC) for v in CLASSIC[name][1]]
    rows = max(len(CLASSIC[name][2]) for name in CLASSIC)
    points, values, grads, hessians = [], [], [], []
    for r in range(rows):
        point, grad, blocks, value = [], [], [], 0.0
        for name in sorted(CLASSIC):
            case = CLASSIC[name][2][r % len(CLASSIC[name][2])]
            point += case[0]
            value += case[1]
            grad += case[2]
            blocks.append(np.array(case[3]))
        hessian = np.zeros((len(variables), len(variables)))
        start = 0
        for block in blocks:
            hessian[start:start + len(block), start:start + len(block)] = block
            start += len(block)
        points.append(point), values.append(value), grads.append(grad), hessians.append(hessian)
    return expr, variables, np.array(points), values, grads, hessians


@pytest.mark.parametrize("strategy", ["straight", "tape"])
def test_every_classic_case_in_numba_rows_and_batches(strategy):
    expr, variables, points, values, grads, hessians = _all_classics()
    fn = sg.compile(expr, variables, strategy=strategy, hessian=True)
    batch_values, batch_grads = fn.value_and_grad(points)
    _close(batch_values, values)
    _close(batch_grads, grads)
    if strategy == "tape":  # straight-line Hessian batches of this many selects take Numba
        _close(fn.hessian(points), hessians)  # ~15 s to compile; the grid test has them
    for i, point in enumerate(points):
        v, g_ = fn.value_and_grad(*point)
        _close(v, values[i])
        _close(g_, grads[i])
        _close(fn.hessian(*point), hessians[i])


def test_guarded_sqrt_in_static_and_dynamic_graphs():
    at = np.array([-1.0, 0.0, 4.0])
    expected_value, expected_grad = 2.0, [0.0, 0.0, 0.25]
    # define-then-run
    xs = tf.placeholder("xs", shape=(3,))
    total = tf.reduce_sum(tf.where(xs > 0, tf.sqrt(xs), 0.0))
    with tf.Session(backend="python") as session:
        value, (grad,) = session.run([total, tf.gradients(total, xs)], feed_dict={xs: at})
    _close(value, expected_value)
    _close(grad, expected_grad)
    # define-by-run
    ts = dyn.tensor(at, requires_grad=True)
    loss = dyn.where(ts > 0, dyn.sqrt(ts), 0.0).sum()
    loss.backward()
    _close(loss.item(), expected_value)
    _close(ts.grad.numpy(), expected_grad)
    # frozen into a compiled function
    frozen = dyn.freeze(lambda u: dyn.where(u > 0, dyn.sqrt(u), 0.0).sum(), at,
                        backend="python")
    value, (grad,) = frozen.value_and_grad(at)
    _close(value, expected_value)
    _close(grad, expected_grad)


def test_jax_faq_example_gives_zero_not_nan():
    # JAX's FAQ: grad(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.))(-1.) is nan.
    fn = sg.compile(sg.where(X > 0, sg.sqrt(X), 0.0), [X], backend="python")
    value, gradient = fn.value_and_grad(-1.0)
    assert value == 0.0 and gradient.tolist() == [0.0]


def test_branches_add_no_guards_to_smooth_derivatives():
    # Guards come only from masks: a smooth expression's gradient holds no `where`.
    f = sg.exp(X * Y) * sg.log(Y) + sg.sqrt(X) / Y
    assert not any(node.op == "where" for node in topological_order(sg.grad(f, XY)))


def test_a_branch_that_can_never_be_taken_contributes_a_structural_zero():
    # where(c, where(c, a, b), z): b is never live, so its derivative is not even built.
    f = sg.where(X > 0, sg.where(X > 0, X * X, sg.log(X)), Y)
    nodes = topological_order(sg.grad(f, XY))
    assert not any(node.op == "div" for node in nodes)  # log's partial 1/x is not there


def test_a_relu_layers_gradient_selects_once_per_unit():
    # Below each relu the products are finite, so the guard is dropped at once: one select per
    # hidden unit (as a plain mask product would cost), not one per weight.
    rng = np.random.default_rng(0)
    inputs = sg.symbols("i0 i1 i2 i3")
    weights, scales = rng.normal(size=(6, 4)), rng.normal(size=6)
    hidden = [sg.relu(sg.add(*[weights[j, i] * inputs[i] for i in range(4)])) for j in range(6)]
    out = sg.add(*[scales[j] * hidden[j] for j in range(6)])
    nodes = topological_order(sg.grad(out, list(inputs)))
    assert sum(node.op == "where" for node in nodes) == 6
