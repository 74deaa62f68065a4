"""Bad use of static and dynamic graphs gets a clear error, and seeded backward works."""

from __future__ import annotations

import numpy as np
import pytest

import symgraph.dynamic as dyn
import symgraph.static as st
from symgraph.graphs.freeze import FreezeError
from symgraph.graphs.tensor import ShapeError


@pytest.fixture
def model():
    graph = st.Graph()
    with graph.as_default():
        x, y_true = st.placeholder("x", (2,)), st.placeholder("y_true", (2,))
        W = st.Variable([2.0, 1.0], name="W")
        loss = st.reduce_mean(st.square(W * x - y_true))
    return graph, x, y_true, W, loss


def test_feeding_an_unknown_placeholder(model):
    graph, x, y_true, W, loss = model
    stranger = st.placeholder("x", (2,), graph=st.Graph())  # same name, another graph
    with st.Session(graph, backend="python") as sess:
        for key in (stranger, W, "nonexistent"):
            with pytest.raises(st.GraphError, match="is not a placeholder of this graph"):
                sess.run(loss, {x: [1, 2], y_true: [0, 0], key: [1, 2]})
        assert sess.run(loss, {"x": [1, 2], "y_true": [0, 0]}) == pytest.approx(4.0)


def test_a_missing_feed(model):
    graph, x, y_true, W, loss = model
    with st.Session(graph, backend="python") as sess:
        with pytest.raises(st.GraphError, match=r"placeholder\(s\) \['y_true'\] need a value"):
            sess.run(loss, {x: [1.0, 2.0]})
        assert sess.run(W * x, {x: [1.0, 2.0]}).tolist() == [2.0, 2.0]  # y_true not needed


def test_a_shape_mismatch_in_a_feed_and_in_graph_building(model):
    graph, x, y_true, W, loss = model
    with st.Session(graph, backend="python") as sess:
        with pytest.raises(st.GraphError, match=r"shape mismatch: placeholder 'x' has shape "
                                                r"\(2,\), fed a value of shape \(3,\)"):
            sess.run(loss, {x: [1.0, 2.0, 3.0], y_true: [0.0, 0.0]})
    with pytest.raises(ShapeError, match=r"shapes \(2,\), \(3,\) do not broadcast"):
        W + np.ones(3)
    with pytest.raises(ShapeError, match="matmul shapes"):
        W @ np.ones((3, 2))
    with pytest.raises(ShapeError, match=r"shapes \(2,\), \(3,\) do not broadcast"):
        dyn.tensor([1.0, 2.0], requires_grad=True) * dyn.tensor([1.0, 2.0, 3.0])


def test_graph_misuse_messages(model):
    graph, x, y_true, W, loss = model
    with graph.as_default():
        assert st.placeholder("x").name == "x_1"  # renamed, as TensorFlow 1 does
        assert st.placeholder("x").name == "x_2"
        with pytest.raises(st.GraphError, match="element name 'W\\[0\\]' of 'W\\[0\\]'"):
            st.Variable(1.0, name="W[0]")
        with pytest.raises(st.GraphError, match="needs a scalar loss"):
            st.GradientDescentOptimizer(0.1).minimize(W * x)
    q = st.placeholder("q", (2,), graph=st.Graph())
    with st.Session(graph, backend="python") as sess:
        with pytest.raises(st.GraphError, match="neither a placeholder nor a variable"):
            sess.run(q * 2.0, {x: [1.0, 2.0]})
    with pytest.raises(TypeError, match="truth value of a symbolic tensor"):
        bool(loss > 1.0)


def test_backward_on_a_non_scalar_needs_a_seed_and_works_with_one():
    x = dyn.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    with pytest.raises(RuntimeError, match=r"non-scalar tensor \(shape \(3,\)\) needs a seed"):
        y.backward()
    with pytest.raises(ShapeError, match="seed has shape"):
        y.backward(gradient=[1.0, 1.0])
    y.backward(gradient=[1.0, 0.5, -1.0])
    assert x.grad.tolist() == [2.0, 2.0, -6.0]  # sum(seed * dy/dx)
    y.backward(gradient=np.ones(3))  # gradients accumulate, as in PyTorch
    assert x.grad.tolist() == [4.0, 6.0, 0.0]


def test_reading_grad_before_backward_raises():
    W = dyn.tensor([2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\.grad is not available before backward\(\)"):
        W.grad  # noqa: B018
    loss = (W * 3.0).sum()
    with pytest.raises(RuntimeError, match="not available before backward"):
        W.grad  # noqa: B018
    loss.backward()
    assert W.grad.item() == 3.0
    with pytest.raises(RuntimeError, match="kept on leaf tensors only"):
        loss.grad  # noqa: B018
    with pytest.raises(RuntimeError, match="does not require grad"):
        dyn.tensor(1.0).grad  # noqa: B018
    with pytest.raises(RuntimeError, match="does not require grad"):
        dyn.tensor(1.0).backward()
    W.grad.zero_()
    assert W.grad.item() == 0.0
    dyn.SGD([W], lr=0.1).zero_grad()
    with pytest.raises(RuntimeError, match="not available before backward"):
        W.grad  # noqa: B018


def test_in_place_changes_of_recorded_tensors_are_refused_outside_no_grad():
    W = dyn.tensor([2.0], requires_grad=True, name="W")
    with pytest.raises(RuntimeError, match=r"only inside `with no_grad\(\):`"):
        W -= 1.0
    y = W * 2.0
    with dyn.no_grad():
        W -= 1.0
        with pytest.raises(RuntimeError, match="cannot be changed in place inside no_grad"):
            y += 1.0
    assert W.item() == 1.0
    with pytest.raises(RuntimeError, match="W changed in place after this result"):
        y.backward()  # y was computed from W = 2
    y = W * 2.0
    y += W * W  # recording: a functional update, y = y + W * W
    y.backward()
    assert (y.item(), W.grad.item()) == (3.0, 4.0)
    W.data -= 0.5  # PyTorch's idiom: .data shares the values
    assert W.item() == 0.5


def test_freeze_errors():
    frozen = dyn.freeze(lambda x: x * 2.0, np.ones(2), backend="python")
    with pytest.raises(FreezeError, match="needs a one-element output"):
        frozen.value_and_grad(np.ones(2))

    def backward_inside(x):
        (x * x).backward()
        return x

    with pytest.raises(RuntimeError, match="cannot run inside a function being frozen"):
        dyn.freeze(backward_inside, 1.0, backend="python")
    many = dyn.freeze(lambda x: x * float(x.item()), backend="python", max_traces=2)
    many(1.0), many(2.0)
    with pytest.raises(FreezeError, match="more than 2 different paths"):
        many(3.0)
