"""Derivatives on the DAG: correct (finite differences), shared with f, and never swelling."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symgraph as sg
from symgraph.ir.traversal import topological_order
from symgraph.lower.programs import build_programs

from .corpus import CORPUS

x, y, z = sg.symbols("x y z")


def _value(expr, args, point):
    return float(sg.evaluate(expr, dict(zip(args, point))))


def _point(args, rng):
    # Positive, moderate values keep log/sqrt of the corpus expressions defined.
    return rng.uniform(0.3, 1.2, size=len(args))


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_gradient_matches_central_differences_in_a_random_direction(name):
    expr, args = CORPUS[name]()
    rng = np.random.default_rng(7)
    gradient = sg.grad(expr, args)
    for _ in range(3):
        point = _point(args, rng)
        direction = rng.normal(size=len(args))
        direction /= np.linalg.norm(direction)
        g = np.array([_value(d, args, point) for d in gradient])
        if not np.all(np.isfinite(g)) or not math.isfinite(_value(expr, args, point)):
            continue
        h = 1e-5 * max(1.0, float(np.abs(point).max()))
        fd = (_value(expr, args, point + h * direction)
              - _value(expr, args, point - h * direction)) / (2 * h)
        scale = max(1.0, abs(fd), float(np.abs(g).max()))
        assert abs(g @ direction - fd) <= 1e-5 * scale


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_fused_value_and_gradient_program_is_at_most_4x_the_value_program(name):
    expr, args = CORPUS[name]()
    value, fused = build_programs([expr], args, args, scalar=True, with_hessian=False)
    assert fused.op_count <= 4 * value.op_count + len(args)


def test_derivatives_reuse_the_forward_nodes():
    f = sg.exp(x * y)
    dfdx, dfdy = sg.grad(f, [x, y])
    assert f in dfdx.args and f in dfdy.args  # exp' = exp: the very same node
    t = sg.tanh(x)
    (dt,) = sg.grad(t, [x])
    assert any(n is t for n in topological_order([dt]))  # tanh' = 1 - tanh**2 reuses it


def test_a_square_is_one_node_however_written_so_tans_derivative_reuses_the_users():
    x = sg.symbols("x")
    u = sg.tan(0.5 * x + 0.1)
    assert u * u is u**2 and (x * x).op == "pow"
    f = 1.5 * u**2  # its derivative, 3 u (1 + u*u) / 2, holds u*u by tan's rule
    d = sg.diff(f, x)
    nodes = topological_order([f, d])
    assert [n for n in nodes if n.op == "mul" and all(a is u for a in n.args)] == []
    assert len([n for n in nodes if n.op == "pow" and n.args[0] is u]) == 1


def test_coefficients_that_cancel_leave_the_adjoints_bare():
    # 0.5*u**2 -> 0.5*(2*u)*u' is u*u', and (-0.5*a)*(2*b) is -(a*b): the halves of squares
    # (energies, losses, log-likelihoods) cost no multiplications in their gradients
    u = sg.exp(-y) * (1.5 - x)
    dfdx, dfdy = sg.grad(0.5 * u**2 + 0.5 * (2.0 - z) ** 2, [x, y])
    (dfdz,) = sg.grad(-0.5 * (1.2 - z) ** 2 + sg.log(x), [z])
    assert dfdz is 1.2 - z  # the forward node itself
    constants = {n.value for n in topological_order([dfdx, dfdy]) if n.op == "const"}
    assert not constants & {0.5, 2.0, -0.5, -2.0}, constants
    point = {x: 0.7, y: 0.3, z: 0.4}
    assert math.isclose(float(sg.evaluate(dfdx, point)), -math.exp(-0.6) * 0.8)


def test_gradient_of_the_seed_polynomial_is_2x_plus_2():
    (g,) = sg.grad(x**2 + 2 * x + 1, [x])
    assert g is 2 * x + 2


def test_variables_the_expression_does_not_use_get_structural_zero():
    assert sg.grad(x * x, [x, y])[1] is sg.const(0.0)


def test_hessian_is_symmetric_and_matches_the_analytic_one():
    f = sg.exp(x * y) + x**3 * z
    H = sg.hessian(f, [x, y, z])
    at = {x: 0.5, y: -1.0, z: 2.0}
    values = np.array([[float(sg.evaluate(h, at)) for h in row] for row in H])
    e = math.exp(-0.5)
    expected = np.array([[e * 1.0 + 6 * 0.5 * 2, e * (1 + 0.5 * -1), 3 * 0.25],
                         [e * (1 + 0.5 * -1), e * 0.25, 0.0],
                         [3 * 0.25, 0.0, 0.0]])
    np.testing.assert_allclose(values, expected, rtol=1e-14)
    assert all(H[i][j] is H[j][i] for i in range(3) for j in range(3))


def test_nth_derivative_of_exp_and_sin():
    assert float(sg.evaluate(sg.diff(sg.exp(2 * x), x, 3), {x: 0.0})) == 8.0
    fourth = sg.diff(sg.sin(x), x, 4)
    assert float(sg.evaluate(fourth, {x: 0.7})) == pytest.approx(math.sin(0.7), rel=1e-15)
    assert sg.diff(x**3, x, 0) is x**3


def test_jvp_and_vjp_agree_with_the_jacobian():
    outputs = [x * y * z, sg.sin(x) + y, sg.hypot(y, z)]
    J = sg.jacobian(outputs, [x, y, z])
    at = {x: 0.3, y: 1.5, z: -2.0}
    Jv = np.array([[float(sg.evaluate(d, at)) for d in row] for row in J])
    v, u = np.array([1.0, -2.0, 0.5]), np.array([0.25, 3.0, -1.0])
    jvp = [float(sg.evaluate(t, at)) for t in sg.jvp(outputs, [x, y, z], v.tolist())]
    vjp = [float(sg.evaluate(c, at)) for c in sg.vjp(outputs, u.tolist(), [x, y, z])]
    np.testing.assert_allclose(jvp, Jv @ v, rtol=1e-14)
    np.testing.assert_allclose(vjp, u @ Jv, rtol=1e-14)


def test_gradient_cost_does_not_grow_with_the_number_of_variables():
    n = 300
    xs = list(sg.symbols(" ".join(f"v{i}" for i in range(n))))
    f = sg.log(sg.add(*[sg.exp(v) * v for v in xs]))
    value, fused = build_programs([f], xs, xs, scalar=True, with_hessian=False)
    assert fused.op_count <= 4 * value.op_count + n  # one reverse sweep, not one per variable


def test_derivatives_need_symbols():
    with pytest.raises(TypeError, match="variables of a derivative must be symbols"):
        sg.grad(x * y, [x * y])


def test_text_sympy_and_names_are_accepted_wherever_an_expression_or_symbol_is():
    import sympy

    assert sg.grad("x**2 + 2*x + 1", "x") == [2 * x + 2]
    assert sg.diff("x**3", "x", 2) is 6 * x
    sx = sympy.Symbol("x")
    hessian = sg.hessian(sx**2 * sympy.Symbol("y"), ["x", "y"])
    assert hessian == [[2 * y, 2 * x], [2 * x, sg.const(0)]]


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_the_exponents_derivative_of_x_to_the_y_at_x_zero_is_the_limit_zero(backend):
    # Issue 21, item 5: d/dy x**y = x**y * log(x) was 0 * -inf = nan at x = 0 (PyTorch and
    # JAX give 0, the limit for y > 0); the Hessian there is finite too.
    x, y = sg.symbols("x y")
    fn = sg.compile(x**y, [x, y], backend=backend)
    value, gradient = fn.value_and_grad(0.0, 2.0)
    assert value == 0.0 and gradient.tolist() == [0.0, 0.0]
    assert fn.hessian(0.0, 2.0).tolist() == [[2.0, 0.0], [0.0, 0.0]]
    value, gradient = fn.value_and_grad(2.0, 3.0)  # elsewhere: the plain rule
    assert gradient.tolist() == [12.0, 8.0 * math.log(2.0)]
    assert math.isnan(fn.grad(-1.0, 0.5)[1])  # log of a negative base stays NaN (NumPy)


# x**y's base derivative y * x**(y-1) takes x**(y-1) as pow_prev(x, y, x**y): x**y / x where
# that power is normal, else pow itself. Edge points where one of the two ways fails: x = 0
# (x**y 0, 1 or inf), negative x (integer and fractional y), x**y over- and underflowing
# while x**(y-1) does not, subnormal powers, infinities and nan.
POW_EDGES = [(0.0, 2.5), (0.0, 1.0), (0.0, 0.5), (0.0, 0.0), (-0.0, 3.0), (-2.0, 3.0),
             (-2.0, -2.0), (-2.0, 2.5), (1e-200, 2.0), (1e-300, 1.5), (1e200, 1.6), (10.0, 308.0),
             (10.0, 309.0), (0.5, 1074.5), (2.0, -1100.0), (1e-310, 1.0), (np.inf, 2.0),
             (np.inf, 0.0), (np.inf, -1.0), (np.nan, 0.0), (1.0, np.nan), (3.0, 0.0), (1.7, 0.6)]


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_x_to_the_y_has_one_pow_and_its_base_derivative_is_the_plain_rules_at_edges(backend):
    x, y = sg.symbols("x y")
    value_grad = build_programs([x**y], [x, y], [x, y], True, False)[1]
    assert [s.op for s in value_grad.steps].count("pow") == 1
    fn = sg.compile(x**y, [x, y], backend=backend)
    X = np.array(POW_EDGES)
    with np.errstate(all="ignore"):
        want = X[:, 1] * np.power(X[:, 0], X[:, 1] - 1.0)
    # one point at a time (the row kernel), and a batch (Numba: lanes, flagged points redone)
    ones = np.array([fn.grad(a, b)[0] for a, b in X])
    batch = fn.value_and_grad(np.repeat(X, 20, axis=0))[1][::20, 0]
    for got in (ones, batch):
        np.testing.assert_allclose(got, want, rtol=3e-16, atol=0.0)  # nan where want is


def test_the_exponents_derivative_of_x_to_the_y_reuses_the_expressions_log_of_x():
    # The guard at x = 0 selects log(x) away rather than taking the log of a guarded copy of
    # x: with log(x) in the expression already (weibull's log(d/lam)), value and gradient
    # hold one log, and the gradient still matches SymPy's where x > 0.
    import sympy

    x, y = sg.symbols("x y")
    expr = y * sg.log(x) + x**y
    value_grad = build_programs([expr], [x, y], [x, y], True, False)[1]
    assert [s.op for s in value_grad.steps].count("log") == 1
    sx, sy = sympy.symbols("x y", positive=True)
    want = [sympy.diff(sy * sympy.log(sx) + sx**sy, v) for v in (sx, sy)]
    got = sg.compile(expr, [x, y], backend="python").grad(1.7, 0.6)
    np.testing.assert_allclose(got, [float(w.subs({sx: 1.7, sy: 0.6})) for w in want],
                               rtol=1e-14)


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_log_cosh_differentiates_to_tanh_finite_where_cosh_overflows(backend):
    # d/dv log(cosh(v)) = sinh(v)/cosh(v) is one tanh (ad/quotients.py): no sinh, no division,
    # and +-1 past |v| = 710, where inf / inf was nan; a term without the quotient keeps sinh.
    import sympy

    w, x = sg.symbols("w x")
    f = sg.log(sg.cosh(w * x - 1.0)) + 0.5 * sg.log(sg.cosh(2.0 * w - x)) + sg.cosh(w)
    ops = [s.op for s in build_programs([f], [w, x], [w, x], True, False)[1].steps]
    assert ops.count("tanh") == 2 and ops.count("sinh") == 1 and ops.count("div") == 0
    fn = sg.compile(f, [w, x], backend=backend)
    sw, sx = sympy.symbols("w x", real=True)
    sf = (sympy.log(sympy.cosh(sw * sx - 1)) + sympy.log(sympy.cosh(2 * sw - sx)) / 2
          + sympy.cosh(sw))
    for point in [(0.3, 1.7), (-1.2, 0.4), (2.5, -3.0)]:
        want = [float(sympy.diff(sf, v).subs({sw: point[0], sx: point[1]})) for v in (sw, sx)]
        np.testing.assert_allclose(fn.grad(*point), want, rtol=1e-14)
    grad = fn.grad(1.0, 800.0)  # cosh(799) and cosh(-798) overflow; cosh(1) does not
    np.testing.assert_allclose(grad, [800.0 - 1.0 + math.sinh(1.0), 1.0 + 0.5], rtol=1e-15)


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_quotient_chains_through_exp_and_log_cancel_and_stay_right_where_the_quotient_overflows(
        backend):
    # Weibull's terms (k-1) log(d/lam) - (d/lam)**k, lam = exp(b): the gradient divides by
    # nothing (SymPy's algebra cancels lam * (-(d/lam)/lam) and (1/u) * u; ad/quotients.py does
    # too), and d/db = -3(k-1) + k sum (d/lam)**k holds also where lam overflows (d/lam = 0) or
    # underflows (inf), where the plain products were 0 * inf = nan.
    k, b = sg.symbols("k b")
    ds = (0.5, 2.0, 3.0)
    f = sum([(k - 1) * sg.log(d / sg.exp(b)) - (d / sg.exp(b)) ** k for d in ds[1:]],
            (k - 1) * sg.log(ds[0] / sg.exp(b)) - (ds[0] / sg.exp(b)) ** k)
    ops = [s.op for s in build_programs([f], [k, b], [k, b], True, False)[1].steps]
    assert (ops.count("div"), ops.count("pow"), ops.count("pow_prev")) == (3, 3, 0)
    fn = sg.compile(f, [k, b], backend=backend)

    def d_db(kv: float, bv: float) -> float:
        return -3 * (kv - 1) + kv * sum((d * math.exp(-bv)) ** kv for d in ds)

    assert math.isclose(fn.grad(1.5, 0.3)[1], d_db(1.5, 0.3), rel_tol=1e-14)
    assert fn.grad(1.5, 800.0)[1] == -1.5 and fn.grad(0.5, 800.0)[1] == 1.5
    assert fn.grad(1.5, -800.0)[1] == math.inf


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_a_charge_over_a_square_root_costs_one_division_in_its_gradient_and_keeps_its_edges(
        backend):
    # c / sqrt(u): the quotient's -f / r and sqrt's 0.5 / r meet as (-0.5 f) / (r * r)
    # (ad/quotients.py): two divisions in value and gradient, not three; SymPy's gradient
    # where u > 0, and the plain rules' inf, -0.0 and nan at u = 0, inf and below 0.
    import sympy

    x, y = sg.symbols("x y")
    f = -0.42804 / sg.sqrt((x - y) ** 2 + 0.01) + 2.0 / sg.sqrt(x)
    ops = [s.op for s in build_programs([f], [x, y], [x, y], True, False)[1].steps]
    assert ops.count("div") == 4 and ops.count("sqrt") == 2
    fn = sg.compile(f, [x, y], backend=backend)
    sx, sy = sympy.symbols("x y", positive=True)
    sf = -0.42804 / sympy.sqrt((sx - sy) ** 2 + 0.01) + 2 / sympy.sqrt(sx)
    for point in [(0.3, 1.7), (2.0, 0.4), (1e-6, 3.0), (1e100, 1.0)]:
        want = [float(sympy.diff(sf, v).subs({sx: point[0], sy: point[1]})) for v in (sx, sy)]
        np.testing.assert_allclose(fn.grad(*point), want, rtol=2e-15)
    edge = sg.compile(2.0 / sg.sqrt(x), [x], backend=backend)  # d/dx = -x**-1.5
    assert edge.grad(0.0)[0] == -math.inf
    assert edge.grad(math.inf)[0] == 0.0
    assert math.isnan(edge.grad(-1.0)[0])


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_hypot_and_atan2_partials_share_one_division_of_their_adjoint(backend):
    # a / q and b / q (hypot's, atan2's) times one adjoint: (adjoint / q) * a and * b, one
    # division (ad/quotients.py); SymPy's gradient, and hypot's subgradient 0 at the origin.
    import sympy

    x, y = sg.symbols("x y")
    for f, sf in [(sg.hypot(x, y), lambda a, b: sympy.sqrt(a**2 + b**2)),
                  (sg.atan2(y, x), lambda a, b: sympy.atan2(b, a))]:
        ops = [s.op for s in build_programs([f], [x, y], [x, y], True, False)[1].steps]
        assert ops.count("div") == 1, (f, ops)
        fn = sg.compile(f, [x, y], backend=backend)
        sx, sy = sympy.symbols("x y", positive=True)
        for point in [(0.3, 1.7), (2.0, 0.4), (3e-5, 2e-5)]:
            want = [float(sympy.diff(sf(sx, sy), v).subs({sx: point[0], sy: point[1]}))
                    for v in (sx, sy)]
            np.testing.assert_allclose(fn.grad(*point), want, rtol=2e-15)
    assert sg.compile(sg.hypot(x, y), [x, y], backend=backend).grad(0.0, 0.0).tolist() == [
        0.0, 0.0]


def _multiplications(f, xs) -> int:
    steps = build_programs([f], xs, xs, True, False)[1].steps
    return sum(len(s.operands) - 1 for s in steps if s.op == "mul")


def test_a_factor_all_of_a_sums_adjoint_terms_share_is_multiplied_once_and_agrees_with_sympy():
    # d/dmu of sum_k ((c_k - mu) exp(-ls))^2 is exp(-ls) times a sum, not a sum of products
    # with exp(-ls) (ad/factoring.py); the gradient is SymPy's.
    import sympy

    mu, ls = sg.symbols("mu ls")
    cs = [0.3, -1.1, 2.5, 0.7, -0.2, 1.9]
    f = sg.parse(" + ".join(f"(({c} - mu)*exp(-ls))**2" for c in cs))
    # exp(-ls) times: each term in the value (6), each adjoint 2*exp(-ls)*(c - mu) (6), and
    # once each for d/dmu's and d/dls's sums (d/dmu's was 6 products before ad/factoring)
    steps = build_programs([f], [mu, ls], [mu, ls], True, False)[1].steps
    e = next(s.target for s in steps if s.op == "exp")
    sums = {s.target for s in steps if s.op == "add" and len(s.operands) == 6}  # (not c - mu)
    by_e = [s for s in steps if s.op == "mul" and any(o.value == e for o in s.operands)]
    assert len(by_e) == 6 + 6 + 2, steps
    assert sum(any(o.value in sums for o in s.operands) for s in by_e) == 2, steps
    assert _multiplications(f, [mu, ls]) == 6 + 12 + 1 + 6 + 1
    smu, sls = sympy.symbols("mu ls")
    sf = sum(((c - smu) * sympy.exp(-sls)) ** 2 for c in cs)
    fn = sg.compile(f, [mu, ls], backend="python")
    for point in [(0.4, -0.3), (-2.0, 1.5), (1e-3, 20.0)]:
        want = [float(sympy.diff(sf, v).subs({smu: point[0], sls: point[1]})) for v in (smu, sls)]
        np.testing.assert_allclose(fn.grad(*point), want, rtol=1e-14)


def test_factoring_never_takes_apart_an_adjoint_passed_whole_to_two_arguments():
    # sqrt(1 + sum_k (u_k - u0)^2) (minimal_surface's term): each d/du_k is a product
    # t * (2 (u_k - u0)) that d/du0's sum reuses; taking t out of that sum would compute
    # the three products again (four more multiplications)
    u = sg.symbols("u0 u1 u2 u3")
    f = sg.sqrt(1 + sum((u[k] - u[0]) ** 2 for k in (1, 2, 3)))
    steps = build_programs([f], u, u, True, False)[1].steps
    assert sum(s.op == "mul" for s in steps) == 6, steps
