"""Tensors of scalar nodes follow NumPy: broadcasting, matmul, reductions, shapes, indexing."""

from __future__ import annotations

import numpy as np
import pytest

from symgraph.graphs import tensor as T
from symgraph.ir.evaluate import evaluate


def _values(t: T.Tensor, env: dict) -> np.ndarray:
    return np.array(evaluate(t.flat_nodes(), env), dtype=float).reshape(t.shape)


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    a, b, v = rng.normal(size=(2, 3)), rng.normal(size=(3, 4)), rng.normal(size=3)
    A, B, V = T.symbolic("A", (2, 3)), T.symbolic("B", (3, 4)), T.symbolic("v", 3)
    env = {}
    for sym_t, num in ((A, a), (B, b), (V, v)):
        env.update(zip((n.value for n in sym_t.flat_nodes()), num.ravel()))
    return (A, B, V), (a, b, v), env


def test_operations_match_numpy(data):
    (A, B, V), (a, b, v), env = data
    cases = [
        (A + V, a + v), (A * 2.0 - V, a * 2.0 - v), (1.0 / (A * A + 1.0), 1.0 / (a * a + 1.0)),
        (A @ B, a @ b), (A @ V, a @ v), (V @ B, v @ b), (V @ V, v @ v),
        (A.sum(), a.sum()), (A.sum(axis=0), a.sum(axis=0)), (A.mean(axis=1), a.mean(axis=1)),
        (A.mean(), a.mean()), (A.T, a.T), (A.reshape(3, 2), a.reshape(3, 2)), (A[1], a[1]),
        (A[0, 2], a[0, 2]), (A.tanh(), np.tanh(a)), (T.FUNCTIONS["atan2"](A, V), np.arctan2(a, v)),
        (T.where(A > 0.0, A, 0.0), np.where(a > 0, a, 0.0)), (A.square(), a**2),
        (np.ones(3) + V, 1.0 + v),
    ]
    for tensor, expected in cases:
        assert tensor.shape == np.shape(expected)
        np.testing.assert_allclose(_values(tensor, env), expected, rtol=1e-14, atol=1e-15)


def test_a_sum_is_one_node_and_shared_elements_are_shared(data):
    (A, _, V), _, _ = data
    total = A.sum()
    assert total.nodes[()].op == "add" and len(total.nodes[()].args) == 6
    assert (V + 1.0).flat_nodes()[0] is (V + 1.0).flat_nodes()[0]  # interned: free CSE


def test_shape_errors():
    A = T.symbolic("A", (2, 3))
    with pytest.raises(T.ShapeError, match="cannot reshape"):
        A.reshape(4)
    with pytest.raises(T.ShapeError, match="axis 2 is out of range"):
        A.sum(axis=2)
    with pytest.raises(T.ShapeError, match="1-d or 2-d"):
        T.matmul(A.reshape(1, 2, 3), A)
