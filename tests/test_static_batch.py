"""Static graphs with a None batch dimension: the rows are a loop (graphs.batch), so one plan
serves every number of rows, and the numbers equal those of the same graph unrolled over a
fixed shape (the oracle), for losses, gradients (through nested reductions too) and training
steps."""

from __future__ import annotations

import numpy as np
import pytest

import symgraph.static as st
from symgraph.graphs.tensor import ShapeError

RNG = np.random.default_rng(11)
X, Y = RNG.normal(size=(9, 3)), RNG.normal(size=(9, 2))
W0, B0 = RNG.normal(size=(3, 2)), RNG.normal(size=2)


def _mlp(rows):
    graph = st.Graph()
    with graph.as_default():
        x = st.placeholder(st.float64, (rows, 3), name="x")
        y = st.placeholder(st.float64, (rows, 2), name="y")
        W, b = st.Variable(W0, name="W"), st.Variable(B0, name="b")
        out = st.tanh(st.matmul(x, W) + b)
        loss = st.reduce_mean(st.square(out - y))
        spread = st.reduce_sum(st.square(out - st.reduce_mean(out, axis=0)))  # nested
        train = st.train.MomentumOptimizer(0.1, 0.9).minimize(loss + 0.1 * spread)
        grads = st.gradients(loss + spread, [W, x])
    return graph, x, y, loss, spread, train, grads


def test_batched_training_steps_equal_the_unrolled_graphs():
    results = []
    for rows in (None, X.shape[0]):
        graph, x, y, loss, spread, train, grads = _mlp(rows)
        with st.Session(graph, backend="python") as sess:
            steps = [sess.run([train, loss, spread], {x: X, y: Y})[1:] for _ in range(3)]
            gW, gx = sess.run(grads, {x: X, y: Y})
            results.append((np.array(steps), gW, gx))
    for batched, unrolled in zip(*results):
        np.testing.assert_allclose(batched, unrolled, rtol=1e-12, atol=1e-14)
    assert results[0][2].shape == X.shape  # d/dx per row


def test_numba_batched_steps_equal_the_python_backends():
    graph = st.Graph()
    with graph.as_default():
        x, y = st.placeholder(st.float64, (None,), "x"), st.placeholder(st.float64, None, "y")
        W, b = st.Variable([2.0], name="W"), st.Variable([1.0], name="b")
        loss = st.reduce_mean(st.square(W * x + b - y))
        train = st.train.GradientDescentOptimizer(0.1).minimize(loss)
    xs = RNG.normal(size=10_000)
    ys = 3 * xs - 1
    results = {}
    for backend in ("python", "numba"):
        with st.Session(graph, backend=backend) as sess:
            results[backend] = [sess.run([train, loss], {x: xs, y: ys})[1] for _ in range(3)]
    np.testing.assert_allclose(results["numba"], results["python"], rtol=1e-13)


def test_one_plan_serves_every_number_of_rows():
    graph, x, y, loss, spread, train, grads = _mlp(None)
    with st.Session(graph, backend="python") as sess:
        for n in (1, 5, 200):
            xs, ys = RNG.normal(size=(n, 3)), RNG.normal(size=(n, 2))
            value = sess.run(loss, {x: xs, y: ys})
            expected = np.mean((np.tanh(xs @ W0 + B0) - ys) ** 2)
            assert value == pytest.approx(expected, rel=1e-13)
        assert sess.compiled_kernels == 1


def test_per_row_fetches_and_reductions_along_each_axis():
    graph = st.Graph()
    with graph.as_default():
        x = st.placeholder(st.float64, (None, 2), name="x")
        W = st.Variable([1.5, -0.5], name="W")
        rows = x * W
        fetched = [rows, st.reduce_sum(rows, axis=1), st.reduce_sum(rows, axis=0),
                   st.reduce_mean(rows, axis=[0, 1]), st.reduce_sum(rows, axis=-1)]
    xs = RNG.normal(size=(4, 2))
    with st.Session(graph, backend="python") as sess:
        a, b, c, d, e = sess.run(fetched, {x: xs})
    r = xs * [1.5, -0.5]
    np.testing.assert_allclose(a, r)
    np.testing.assert_allclose(b, r.sum(1))
    np.testing.assert_allclose(c, r.sum(0))
    np.testing.assert_allclose(d, r.mean())
    np.testing.assert_allclose(e, r.sum(-1))


def test_batch_dimension_misuse_gets_clear_messages():
    graph = st.Graph()
    with graph.as_default():
        with pytest.raises(st.GraphError, match="only the first"):
            st.placeholder(st.float64, (3, None))
        x = st.placeholder(st.float64, (None, 2), name="x")
        z = st.placeholder(st.float64, (None,), name="z")
        with pytest.raises(ShapeError, match="size 3 faces the batch"):
            x * np.ones((3, 2))
        with pytest.raises(ShapeError, match="batch .None. dimension first"):
            x * z
        with pytest.raises(ShapeError, match="not supported on a tensor with a None"):
            x[0]
        loss = st.reduce_sum(x) + st.reduce_sum(z)
    with st.Session(graph, backend="python") as sess:
        with pytest.raises(st.GraphError, match="different numbers of rows"):
            sess.run(loss, {x: np.ones((3, 2)), z: np.ones(4)})
        with pytest.raises(st.GraphError, match=r"has shape \(None, 2\), fed a value of shape"):
            sess.run(loss, {x: np.ones((3, 3)), z: np.ones(3)})
        assert sess.run(loss, {x: np.ones((3, 2)), z: np.ones(3)}) == 9.0


def test_unrolled_placeholders_too_big_for_memory_are_refused_before_building():
    # Issue 21 item 17: (60000, 784) grew to 3.8 GB before a bare MemoryError.
    for shape in [(10**9,), (60000, 784 * 1000)]:
        with pytest.raises(ShapeError, match="more than this machine's free memory.*None"):
            st.placeholder("x", shape, graph=st.Graph())


def test_the_optimizers_are_under_train_with_tensorflows_rules():
    graph = st.Graph()
    with graph.as_default():
        W = st.Variable([1.0, -2.0], name="W")
        loss = st.reduce_sum(st.square(W))
        adagrad = st.train.AdagradOptimizer(0.1).minimize(loss)
        rmsprop = st.train.RMSPropOptimizer(0.1, momentum=0.5).minimize(loss)
    with pytest.raises(AttributeError, match="GradientDescentOptimizer"):
        getattr(st.train, "FtrlOptimizer")  # noqa: B009
    w = np.array([1.0, -2.0])
    with st.Session(graph, backend="python") as sess:
        sess.run(adagrad)
        g = 2 * w
        expected = w - 0.1 * g / np.sqrt(0.1 + g * g)
        np.testing.assert_allclose(sess.value(W), expected, rtol=1e-15)
        sess.run(rmsprop)
        g = 2 * expected
        ms = 0.9 * 1.0 + 0.1 * g * g
        np.testing.assert_allclose(sess.value(W), expected - 0.1 * g / np.sqrt(ms + 1e-10),
                                   rtol=1e-14)
