"""Static (define-then-run) and dynamic (define-by-run) graphs: the text's programs, agreement
with each other and with `differentiate.grad` + `api.compile`, fused steps, control flow,
freezing, and clear errors."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symgraph.dynamic as dyn
import symgraph.static as st
from symgraph.ad.differentiate import grad
from symgraph.api import compile as compile_kernel
from symgraph.ir.node import symbol

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REL = 1e-12
EXPECTED = {
    "linear": ["Step 0: Loss = 1.0", "Step 1: Loss = 0.9216", "Step 2: Loss = 0.84934656"],
    "backward": ["Gradient of W: 2.0, Gradient of b: 2.0"],
    "polynomial": ["Result: 16.0, Gradient: 8.0"],
}


@pytest.fixture(scope="module")
def example_outputs() -> dict[str, str]:
    """Every example, run at once in parallel subprocesses (two compile Numba kernels)."""
    running = {path.stem: subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True)
               for path in sorted(EXAMPLES.glob("*_static.py")) + sorted(
                   EXAMPLES.glob("*_dynamic.py"))}
    outputs = {}
    for name, process in running.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, f"{name} failed:\n{err}"
        outputs[name] = out
    return outputs


@pytest.mark.parametrize("program", sorted(EXPECTED))
@pytest.mark.parametrize("style", ["static", "dynamic"])
def test_example_prints_the_texts_numbers_and_a_diagram(example_outputs, program, style):
    out = example_outputs[f"{program}_{style}"]
    lines = out.splitlines()
    for expected in EXPECTED[program]:
        assert expected in lines
    assert re.search(r"\|--> .* --> Output \(", out), "the example draws its graph"


def test_frozen_polynomial_example_agrees(example_outputs):
    assert "Frozen: Result: 16.0, Gradient: 8.0" in example_outputs["polynomial_dynamic"]


# -- random small models: dynamic vs static vs grad/compile -----------------------------------


def _linear_data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(20, 5)), rng.normal(size=20), rng.normal(size=5), rng.normal()


def _net_data(seed=1):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(10, 3)), rng.normal(size=(10, 1)), rng.normal(size=(3, 4)),
            rng.normal(size=4), rng.normal(size=(4, 1)), rng.normal(size=1))


def _dynamic_linear(X, y, w, b):
    W, B = dyn.tensor(w, requires_grad=True), dyn.tensor(b, requires_grad=True)
    loss = ((dyn.tensor(X) @ W + B - dyn.tensor(y)) ** 2).mean()
    loss.backward()
    return loss.item(), [W.grad.numpy(), B.grad.numpy()]


def _linear_graph(X, y, w, b, optimizer=None):
    """The linear model's static graph: (graph, feed, W, b, loss, gradients, train op)."""
    graph = st.Graph()
    with graph.as_default():
        Xp, yp = st.placeholder("X", X.shape), st.placeholder("y", y.shape)
        W, B = st.Variable(w, name="W"), st.Variable(b, name="b")
        loss = st.reduce_mean(st.square(Xp @ W + B - yp))
        grads = st.gradients(loss, [W, B])
        train = optimizer.minimize(loss) if optimizer else None
    return graph, {Xp: X, yp: y}, W, B, loss, grads, train


def _static_linear(X, y, w, b):
    graph, feed, _, _, loss, grads, _ = _linear_graph(X, y, w, b)
    with st.Session(graph, backend="python") as sess:
        value, g = sess.run([loss, grads], feed)
    return float(value), g


def _reference_linear(X, y, w, b):
    """The loss written with plain symbols, differentiated by `grad`, run by `compile`."""
    ws, bs = [symbol(f"w{j}") for j in range(5)], symbol("b")
    loss = sum((sum(X[i, j] * ws[j] for j in range(5)) + bs - y[i]) ** 2
               for i in range(20)) / 20.0
    fn = compile_kernel(loss, ws + [bs], backend="python")
    value, g = fn.value_and_grad(np.append(w, b))
    return value, [g[:5], g[5]]


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=REL, atol=0)


def test_linear_model_dynamic_static_and_grad_agree():
    X, y, w, b = _linear_data()
    residual = X @ w + b - y
    numpy_grads = [2 * X.T @ residual / 20, 2 * residual.mean()]
    for value, grads in (_dynamic_linear(X, y, w, b), _static_linear(X, y, w, b),
                         _reference_linear(X, y, w, b)):
        _close(value, np.mean(residual**2))
        _close(grads[0], numpy_grads[0])
        _close(grads[1], numpy_grads[1])


def _net_loss(X, y, W1, b1, W2, b2, module):
    hidden = (X @ W1 + b1).tanh()
    return ((hidden @ W2 + b2 - y) ** 2).mean() if module is dyn else st.reduce_mean(
        st.square(hidden @ W2 + b2 - y))


def _numpy_net(X, y, W1, b1, W2, b2):
    h = np.tanh(X @ W1 + b1)
    r = h @ W2 + b2 - y
    dout = 2 * r / r.size
    dpre = (dout @ W2.T) * (1 - h**2)
    return np.mean(r**2), [X.T @ dpre, dpre.sum(0), h.T @ dout, dout.sum(0)]


def test_tanh_network_dynamic_static_and_grad_agree():
    X, y, *params = _net_data()
    expected_value, expected_grads = _numpy_net(X, y, *params)

    leaves = [dyn.tensor(p, requires_grad=True) for p in params]
    loss = _net_loss(dyn.tensor(X), dyn.tensor(y), *leaves, module=dyn)
    loss.backward()
    _close(loss.item(), expected_value)
    for leaf, g in zip(leaves, expected_grads):
        _close(leaf.grad.numpy(), g)

    graph = st.Graph()
    with graph.as_default():
        Xp, yp = st.placeholder("X", X.shape), st.placeholder("y", y.shape)
        variables = [st.Variable(p, name=n) for p, n in zip(params, ["W1", "b1", "W2", "b2"])]
        static_loss = _net_loss(Xp, yp, *variables, module=st)
    with st.Session(graph, backend="python") as sess:
        value, grads = sess.run([static_loss, st.gradients(static_loss, variables)],
                                {Xp: X, yp: y})
    _close(value, expected_value)
    for g, e in zip(grads, expected_grads):
        _close(g, e)

    # differentiate.grad on the static loss node, compiled by the API as [loss, gradient...]
    symbols = [n for v in variables for n in v.flat_nodes()]
    data = [n for p in (Xp, yp) for n in p.flat_nodes()]
    node = static_loss.flat_nodes()[0]
    fn = compile_kernel([node] + grad(node, symbols), symbols + data, wrt=[], backend="python")
    out = fn(np.concatenate([np.ravel(p) for p in params] + [X.ravel(), y.ravel()]))
    _close(out[0], expected_value)
    _close(out[1:], np.concatenate([np.ravel(e) for e in expected_grads]))


@pytest.mark.parametrize("optimizer, manual", [
    (lambda: st.GradientDescentOptimizer(0.05), "sgd"),
    (lambda: st.MomentumOptimizer(0.05, 0.9), "momentum"),
    (lambda: st.AdamOptimizer(0.05), "adam"),
])
def test_fused_step_equals_gradient_then_update(optimizer, manual):
    X, y, w, b = _linear_data(3)
    graph, feed, W, B, loss, grads, train = _linear_graph(X, y, w, b, optimizer())
    fused = st.Session(graph, backend="python")
    separate = st.Session(graph, backend="python")
    params, state = [w.copy(), np.array(b)], [[np.zeros_like(w), 0.0], [np.zeros_like(w), 0.0]]
    for step in range(1, 6):
        calls = fused.kernel_calls
        _, fused_loss = fused.run([train, loss], feed)
        assert fused.kernel_calls == calls + 1  # forward, gradient and update: one call
        value, g = separate.run([loss, grads], feed)
        _close(fused_loss, value)
        for k in range(2):
            if manual == "sgd":
                params[k] = params[k] - 0.05 * g[k]
            elif manual == "momentum":
                state[0][k] = 0.9 * state[0][k] + g[k]
                params[k] = params[k] - 0.05 * state[0][k]
            else:
                state[0][k] = 0.9 * state[0][k] + 0.1 * g[k]
                state[1][k] = 0.999 * state[1][k] + 0.001 * g[k] ** 2
                rate = 0.05 * math.sqrt(1 - 0.999**step) / (1 - 0.9**step)
                params[k] = params[k] - rate * state[0][k] / (np.sqrt(state[1][k]) + 1e-8)
        # the separate session's variables follow the manual update
        separate.assign(W, params[0])
        separate.assign(B, params[1])
        _close(fused.value(W), params[0])
        _close(fused.value(B), params[1])
    assert fused.compiled_kernels == 1  # built once, compiled once, run five times


def test_training_with_numba_kernel_matches_python_and_dynamic():
    X, y, w, b = _linear_data(4)
    results = {}
    for backend in ("python", "numba"):
        graph, feed, W, B, loss, _, train = _linear_graph(X, y, w, b,
                                                          st.GradientDescentOptimizer(0.1))
        with st.Session(graph, backend=backend) as sess:
            losses = [float(sess.run([train, loss], feed)[1]) for _ in range(4)]
            results[backend] = (losses, sess.value(W), sess.value(B))
    Wd, Bd = dyn.tensor(w, requires_grad=True), dyn.tensor(b, requires_grad=True)
    sgd, losses = dyn.SGD([Wd, Bd], lr=0.1), []
    for _ in range(4):
        sgd.zero_grad()
        loss = ((dyn.tensor(X) @ Wd + Bd - dyn.tensor(y)) ** 2).mean()
        loss.backward()
        sgd.step()
        losses.append(loss.item())
    for backend in ("python", "numba"):
        _close(results[backend][0], losses)
        _close(results[backend][1], Wd.numpy())
        _close(results[backend][2], Bd.numpy())


# -- Python control flow in the dynamic style, and freezing it --------------------------------


def _grow(x):
    """The loop's trip count depends on x: it runs until y reaches 10."""
    y = x
    while y < 10.0:
        y = y * x + dyn.sin(y)
    return y


def test_loop_with_input_dependent_trip_count_has_the_right_gradient():
    for x0 in (1.7, 2.6):
        x = dyn.tensor(x0, requires_grad=True)
        y = _grow(x)
        y.backward()
        h = 1e-6
        fd = (_grow(dyn.tensor(x0 + h)).item() - _grow(dyn.tensor(x0 - h)).item()) / (2 * h)
        assert x.grad.item() == pytest.approx(fd, rel=1e-6)


def test_frozen_loop_agrees_and_retraces_on_another_path():
    frozen = dyn.freeze(_grow, 1.7, backend="python")
    assert frozen.trace_count == 1
    for x0 in (1.7, 1.71, 2.6, 1.7):
        x = dyn.tensor(x0, requires_grad=True)
        y = _grow(x)
        y.backward()
        value, (gradient,) = frozen.value_and_grad(x0)
        _close(value, y.item())
        _close(gradient, x.grad.item())
        _close(frozen(x0), y.item())
    assert frozen.trace_count == 2  # 1.7 and 1.71 share a path; 2.6 takes fewer trips


def test_frozen_function_reads_captured_parameters_and_item_values():
    W = dyn.tensor([0.5, -1.0, 2.0], requires_grad=True)

    @dyn.freeze(backend="python")
    def power_sum(x, n):
        total = dyn.tensor(0.0)
        for k in range(int(n.item())):  # trip count read from an input value
            total = total + ((W * x) ** (k + 1)).sum()
        return total

    x = np.array([1.0, 2.0, 0.5])
    for n in (2.0, 3.0, 2.0):
        value, (gx, gn) = power_sum.value_and_grad(x, n)
        xt = dyn.tensor(x, requires_grad=True)
        eager = power_sum.fn(xt, dyn.tensor(n))
        eager.backward()
        _close(value, eager.item())
        _close(gx, xt.grad.numpy())
        assert gn == 0.0
    assert power_sum.trace_count == 2
    with dyn.no_grad():
        W -= 0.25  # a captured parameter is read at every call, not baked in
    _close(power_sum(x, 2.0), power_sum.fn(dyn.tensor(x), dyn.tensor(2.0)).item())


def test_frozen_with_numba_matches_dynamic():
    X, y, w, b = _linear_data(5)

    def loss(w, b):
        return ((dyn.tensor(X) @ w + b - dyn.tensor(y)) ** 2).mean()

    frozen = dyn.freeze(loss, w, b)  # numba
    value, (gw, gb) = frozen.value_and_grad(w, b)
    expected_value, expected = _dynamic_linear(X, y, w, b)
    _close(value, expected_value)
    _close(gw, expected[0])
    _close(gb, expected[1])
