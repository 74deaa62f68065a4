"""Dask: chunks evaluated by worker processes that rebuild kernels from source text or tape
arrays give the in-memory batch's numbers bit for bit. Skipped without the `dask` extra."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

import symgraph as sg  # noqa: E402
from symgraph.runtime import dask as dask_support  # noqa: E402
from symgraph.runtime.dask import kernel_of, map_dask  # noqa: E402

x, y, z = sg.symbols("x y z")
F = sg.exp(x * y) * sg.sin(z) + sg.hypot(x, z) / (1 + y**2) + sg.where(x > y, z, x)


@pytest.fixture(scope="module")
def client():
    # Worker processes inherit SYMGRAPH_CACHE_DIR (conftest): kernels load from the test cache.
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=None)
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


@pytest.fixture(scope="module")
def points():
    X = np.random.default_rng(3).uniform(-2, 2, (1000, 3))
    X[::97] = [np.nan, 0.0, np.inf]  # edge points travel too
    return X, da.from_array(X, chunks=(129, 2))  # column chunks: map_dask makes them one


def _both_workers_loaded(client, key: str) -> None:
    loaded = client.run(lambda: sorted(dask_support._LOADED))
    assert len(loaded) == 2 and all(key in keys for keys in loaded.values()), loaded


def test_numba_kernels_from_source_on_two_worker_processes(client, points):
    X, dX = points
    fn = sg.compile(F, [x, y, z], hessian=True)
    values, grads = dask.compute(*map_dask(fn, dX, "value_and_grad"))
    expected_values, expected_grads = fn.value_and_grad(X)
    np.testing.assert_array_equal(values, expected_values)
    np.testing.assert_array_equal(grads, expected_grads)
    np.testing.assert_array_equal(map_dask(fn, dX, "hessian").compute(), fn.hessian(X))
    np.testing.assert_array_equal(map_dask(fn, dX).compute(), fn(X))
    _both_workers_loaded(client, kernel_of(fn).key)


def test_python_backend_vector_function_jacobian(client, points):
    X, dX = points
    fn = sg.compile([F, x * y - z], [x, y, z], backend="python")
    np.testing.assert_array_equal(map_dask(fn, dX, "jacobian").compute(), fn.jacobian(X))
    np.testing.assert_array_equal(map_dask(fn, dX, "value").compute(), fn(X))


def test_tape_kernels_travel_as_arrays(client, points):
    X, dX = points
    fn = sg.compile(F, [x, y, z], strategy="tape")
    kernel = kernel_of(fn)
    assert kernel.source is None and all(not t.steps for t in kernel.tapes)
    values, grads = dask.compute(*map_dask(fn, dX, "value_and_grad"))
    expected_values, expected_grads = fn.value_and_grad(X)
    np.testing.assert_array_equal(values, expected_values)
    np.testing.assert_array_equal(grads, expected_grads)
    _both_workers_loaded(client, kernel.key)


def test_kind_errors():
    fn = sg.compile(x * y, [x, y], backend="python")
    dX = da.zeros((4, 2), chunks=2)
    with pytest.raises(ValueError, match="hessian=True"):
        map_dask(fn, dX, "hessian")
    with pytest.raises(ValueError, match="unknown kind"):
        map_dask(fn, dX, "laplacian")
    with pytest.raises(ValueError, match="rows of shape"):
        map_dask(fn, da.zeros((4, 3), chunks=2), "value")


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_reduction_over_rows_from_dask_chunks_equals_the_in_memory_one(client, backend):
    # A function reduced over rows (compile(..., data=...)): each chunk's sums come from a
    # worker; the chunks are combined pairwise. The in-memory call is the oracle, to rounding
    # (Dask's chunks are not the kernel's chunks: the order of the sums differs).
    W, b, x, t = sg.symbols("W b x t")
    fn = sg.compile(sg.tanh(W * x + b) - t * b**2, [W, b], data=[x, t], reduce="mean",
                    hessian=True, backend=backend)
    rng = np.random.default_rng(7)
    xs, ts = rng.normal(size=5000), rng.normal(size=5000)
    dx, dt = da.from_array(xs, chunks=1100), da.from_array(ts, chunks=700)  # unaligned
    params = [0.8, -0.4]
    value, gradient = map_dask(fn, [dx, dt], "value_and_grad", params=params).compute()
    expected = fn.value_and_grad(params, xs, ts)
    np.testing.assert_allclose(value, expected[0], rtol=1e-13)
    np.testing.assert_allclose(gradient, expected[1], rtol=1e-13)
    np.testing.assert_allclose(map_dask(fn, [dx, dt], "hessian", params=params).compute(),
                               fn.hessian(params, xs, ts), rtol=1e-12, atol=1e-15)
    _both_workers_loaded(client, kernel_of(fn).key)
    rows = sg.compile(sg.tanh(W * x + b) - t * b**2, [W, b], data=[x, t], reduce=None,
                      backend="python")
    np.testing.assert_array_equal(map_dask(rows, [dx, dt], "grad", params=params).compute(),
                                  rows.grad(params, xs, ts))
