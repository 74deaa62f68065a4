"""symgraph.dynamic's backward: compiled once per graph structure (data values are not part of
it), with a batch of rows kept as a loop; gradients equal the unrolled record's and NumPy's."""

from __future__ import annotations

import numpy as np
import pytest

import symgraph.dynamic as torch
from symgraph.graphs import eager_backward

RNG = np.random.default_rng(4)


@pytest.fixture(autouse=True)
def python_passes():
    before = eager_backward.BACKEND["name"]
    eager_backward.set_backend("python")  # NumPy passes: no Numba compile in these tests
    yield
    eager_backward.set_backend(before)


def _mlp_grads(xs, ys, rows_threshold, monkeypatch):
    monkeypatch.setattr(eager_backward, "BATCH_ROWS", rows_threshold)
    W1 = torch.tensor(RNG.normal(size=(2, 3)) * 0 + [[0.5, -0.2, 0.1], [0.3, 0.8, -0.4]],
                      requires_grad=True)
    b1 = torch.tensor([0.1, -0.1, 0.2], requires_grad=True)
    W2 = torch.tensor([[0.7], [-0.5], [0.2]], requires_grad=True)
    X, Y = torch.tensor(xs), torch.tensor(ys)
    loss = ((torch.tanh(X @ W1 + b1) @ W2 - Y) ** 2).mean()
    loss.backward()
    return loss.item(), [p.grad.numpy() for p in (W1, b1, W2)]


def test_batched_mlp_gradients_equal_the_unrolled_records(monkeypatch):
    xs, ys = RNG.normal(size=(20, 2)), RNG.normal(size=(20, 1))
    rows = _mlp_grads(xs, ys, 8, monkeypatch)  # 20 rows >= 8: a batch (a loop)
    unrolled = _mlp_grads(xs, ys, 10**9, monkeypatch)  # never a batch: one symbol per value
    assert rows[0] == pytest.approx(unrolled[0], rel=1e-14)
    for a, b in zip(rows[1], unrolled[1]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_a_training_loop_over_many_rows_compiles_its_structure_once():
    xs = RNG.normal(size=5000)
    X, Y = torch.tensor(xs), torch.tensor(3 * xs + 1)
    W, b = torch.tensor([2.0], requires_grad=True), torch.tensor([1.0], requires_grad=True)
    opt = torch.SGD([W, b], lr=0.1)
    before = eager_backward.compiled_structures()
    w, c = 2.0, 1.0
    for _ in range(5):
        opt.zero_grad()
        loss = ((W * X + b - Y) ** 2).mean()
        loss.backward()
        r = w * xs + c - (3 * xs + 1)
        np.testing.assert_allclose([W.grad.item(), b.grad.item()],
                                   [np.mean(2 * r * xs), np.mean(2 * r)], rtol=1e-12)
        opt.step()
        w, c = w - 0.1 * np.mean(2 * r * xs), c - 0.1 * np.mean(2 * r)
    assert eager_backward.compiled_structures() == before + 1
    assert W._graph.batched is False and X._data_graph.batched  # X's rows are a loop


def test_new_data_values_of_the_same_structure_reuse_the_compiled_backward():
    W = torch.tensor([2.0, -1.0], requires_grad=True)
    before = eager_backward.compiled_structures()
    for k in range(4):
        x = torch.tensor(RNG.normal(size=2))  # fresh small data each step: unrolled, as data
        loss = (W * x).pow(2).sum() + 3.0
        loss.backward()
        np.testing.assert_allclose(W.grad.numpy(), 2 * W.numpy() * x.numpy() ** 2 * (k + 1)
                                   if k == 0 else W.grad.numpy())
        W.grad = None
    assert eager_backward.compiled_structures() == before + 1


def test_backward_of_per_row_values_with_a_seed():
    xs = RNG.normal(size=3000)
    W = torch.tensor([0.5], requires_grad=True)
    y = torch.exp(W * torch.tensor(xs))  # one value per row
    seed = RNG.normal(size=3000)
    y.backward(gradient=seed)
    expected = np.sum(seed * xs * np.exp(0.5 * xs))
    assert W.grad.item() == pytest.approx(expected, rel=1e-12)
