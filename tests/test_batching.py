"""Batches split over threads: the same bits as one serial call, Numba's thread setting obeyed."""

from __future__ import annotations

import threading
import time

import numba
import numpy as np
import pytest

import symgraph as sg
from symgraph import batching


def _recording_kernel(calls: list, pause: float = 0.0):
    def kernel(X, OUT):
        calls.append((threading.current_thread().name, X.shape[0], X.flags.c_contiguous))
        time.sleep(pause)  # (releases the GIL, as the generated kernels do)
        OUT[:, 0] = X[:, 0] * 2.0 + X[:, 1]

    return kernel


def test_a_large_batch_is_cut_into_contiguous_parts_that_every_thread_takes_from():
    calls: list = []
    X = np.arange(20_000.0).reshape(10_000, 2)
    OUT = np.full((10_000, 1), np.nan)
    batching.run_batch(_recording_kernel(calls, pause=0.02), X, OUT)
    assert np.array_equal(OUT[:, 0], X[:, 0] * 2.0 + X[:, 1])
    threads = min(numba.get_num_threads(), 10_000 // batching.MIN_ROWS_PER_THREAD)
    assert len(calls) == (threads * batching.PARTS_PER_THREAD if threads > 1 else 1)
    assert sum(rows for _, rows, _ in calls) == 10_000
    assert all(contiguous for _, _, contiguous in calls)
    if threads > 1:
        assert len({name for name, _, _ in calls}) == threads  # really on other threads


def test_a_thread_held_up_leaves_its_later_parts_to_the_others():
    if batching.thread_count(10_000) == 1:
        pytest.skip("one thread")
    caller, calls = threading.current_thread().name, []

    def kernel(X, OUT):
        calls.append(threading.current_thread().name)
        time.sleep(0.2 if threading.current_thread().name == caller else 0.01)
        OUT[:] = 1.0

    OUT = np.zeros((10_000, 1))
    batching.run_batch(kernel, np.ones((10_000, 2)), OUT)
    assert (OUT == 1.0).all()
    assert calls.count(caller) < len(calls) // 2  # the slow caller took fewer parts


@pytest.mark.parametrize("rows", [0, 1, 7, 2 * batching.MIN_ROWS_PER_THREAD - 1])
def test_small_batches_stay_on_the_calling_thread(rows):
    calls: list = []
    X, OUT = np.ones((rows, 2)), np.empty((rows, 1))
    batching.run_batch(_recording_kernel(calls), X, OUT)
    assert [name for name, _, _ in calls] == [threading.current_thread().name]


def test_numbas_thread_setting_is_obeyed():
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        assert batching.thread_count(1_000_000) == 1
    finally:
        numba.set_num_threads(previous)


def test_an_error_in_a_worker_thread_reaches_the_caller():
    def kernel(X, OUT):
        if X[0, 0] == 0.0:  # only the first part, which runs on a worker thread
            raise RuntimeError("part failed")
        OUT[:] = 0.0

    X = np.arange(20_000.0).reshape(10_000, 2)
    if batching.thread_count(X.shape[0]) == 1:
        pytest.skip("one thread: nothing runs on a worker")
    with pytest.raises(RuntimeError, match="part failed"):
        batching.run_batch(kernel, X, np.empty((10_000, 1)))


def test_a_threaded_batch_through_the_api_equals_point_by_point_calls():
    x, y = sg.symbols("x y")
    # Arithmetic and sqrt only: batch kernels compute exp/sin... with symgraph.vecmath, which
    # may differ from the row kernel's libm in the last bit.
    fn = sg.compile(sg.sqrt(x * x + 1.0) * y + x / y + x ** 3, [x, y])
    X = np.random.default_rng(3).uniform(-2.0, 2.0, size=(3 * batching.MIN_ROWS_PER_THREAD + 5, 2))
    X[::97, 1] = 0.0  # division by zero: inf/nan rows in every part
    values, grads = fn.value_and_grad(X)
    for i in range(0, X.shape[0], 61):
        v, g = fn.value_and_grad(X[i])
        assert np.array_equal([v, *g], [values[i], *grads[i]], equal_nan=True)


def test_cheap_kernels_need_more_rows_before_a_second_thread_pays():
    assert batching.rows_per_thread(5) > batching.rows_per_thread(500)
    assert batching.rows_per_thread(10**9) == batching.MIN_ROWS_PER_THREAD
    assert batching.thread_count(100_000, batching.rows_per_thread(5)) == 1
