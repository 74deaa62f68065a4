"""Batches split over threads: the same bits as one serial call, Numba's thread setting obeyed."""

from __future__ import annotations

import threading
import time

import numba
import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime import batching
from tests import corpus


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
    # Arithmetic and sqrt only: batch kernels compute exp/sin... with
    # symgraph.backends.numba.vecmath, which may differ from the row kernel's libm in the last bit.
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


# -- generated NAME_chunks kernels: threads share a batch through one claims array -----------


def _chunked(kind: str) -> tuple:
    """(chunks kernel, batch kernel, inputs) of a lane kernel or a per-point loop."""
    x, y = sg.symbols("x y")
    # a program without a vector step (polygamma, its derivative polygamma: scalar) keeps the
    # per-point loop
    fn = (sg.compile(*corpus.linear_mse(10)) if kind == "lanes"
          else sg.compile(sg.polygamma(1, x), [x, y]))
    assert ("_lanes(" in fn.source) == (kind == "lanes")
    X = np.random.default_rng(5).uniform(-2.0, 2.0, size=(20_003, 2))
    return fn.module.value_grad_chunks, fn.module.value_grad_batch, X


@pytest.mark.parametrize("kind", ["lanes", "points"])
def test_threads_sharing_one_claims_array_give_the_serial_batchs_bits(kind):
    chunks, batch, X = _chunked(kind)
    serial, shared = np.empty((X.shape[0], 3)), np.full((X.shape[0], 3), np.nan)
    batch(X, serial)
    claims = np.zeros(2, np.int64)
    unfinished: list = []
    threads = [threading.Thread(target=lambda: unfinished.append(chunks(X, shared, claims)))
               for _ in range(3)]
    for thread in threads:
        thread.start()
    unfinished.append(chunks(X, shared, claims))
    for thread in threads:
        thread.join()
    assert np.array_equal(shared, serial, equal_nan=True)
    assert claims[1] == claims[0] - 4  # every chunk finished; each call's last claim failed
    # Each call returns how many chunks other threads had not finished when it stopped
    # spinning for them: 0 unless one of those threads was preempted past the spin's bound
    # (4 threads on a loaded 2-core machine can be), never more than the others' chunks.
    assert len(unfinished) == 4 and all(0 <= u <= 3 for u in unfinished)


@pytest.mark.parametrize("kind", ["lanes", "points"])
def test_a_thread_that_comes_after_every_chunk_was_claimed_writes_nothing(kind):
    chunks, _, X = _chunked(kind)
    claims, OUT = np.zeros(2, np.int64), np.empty((X.shape[0], 3))
    assert chunks(X, OUT, claims) == 0
    late = np.full_like(OUT, np.nan)
    assert chunks(X, late, claims) == 0
    assert np.isnan(late).all()


def test_a_call_waits_a_bounded_time_for_a_chunk_another_thread_holds():
    chunks, _, X = _chunked("lanes")
    OUT = np.full((X.shape[0], 3), np.nan)
    n = chunks(X, OUT, np.zeros(2, np.int64)) or -(-X.shape[0] // 2048)
    claims = np.array([n, n - 1])  # all claimed, one still running elsewhere
    assert chunks(X, OUT, claims) == 1  # returns to let the caller yield, instead of hanging
    claims[1] = n
    assert chunks(X, OUT, claims) == 0


def test_run_shared_calls_again_until_no_chunk_is_left_unfinished():
    answers, seen = [2, 1, 0], []

    def kernel(X, OUT, claims):
        seen.append(threading.current_thread().name)
        return answers.pop(0) if threading.current_thread().name == caller else 0

    caller = threading.current_thread().name
    batching.run_shared(kernel, np.ones((10, 2)), np.empty((10, 1)))  # small: one thread
    assert seen == [caller] * 3 and answers == []


def test_run_shared_starts_the_kernel_on_worker_threads_without_waiting_for_them():
    if batching.thread_count(100_000) == 1:
        pytest.skip("one thread")
    started = threading.Event()
    names: list = []

    def kernel(X, OUT, claims):
        names.append(threading.current_thread().name)
        if threading.current_thread().name != caller:
            started.set()
            time.sleep(0.5)  # a worker still busy when the caller's call is over
        return 0

    caller = threading.current_thread().name
    begin = time.perf_counter()
    batching.run_shared(kernel, np.ones((100_000, 2)), np.empty((100_000, 1)))
    assert time.perf_counter() - begin < 0.4  # the caller's kernel said every chunk was done
    assert started.wait(5.0)
    assert caller in names and any(name.startswith("symgraph-batch-") for name in names)


def test_an_error_in_a_shared_task_is_reported_and_the_worker_keeps_serving(monkeypatch):
    if batching.thread_count(100_000) == 1:
        pytest.skip("one thread")
    reported = threading.Event()
    errors: list = []
    monkeypatch.setattr(threading, "excepthook", lambda args: (errors.append(args.exc_value),
                                                               reported.set()))

    def failing(X, OUT, claims):
        if threading.current_thread().name != caller:
            raise RuntimeError("worker failed")
        return 0

    caller = threading.current_thread().name
    X, OUT = np.ones((100_000, 2)), np.empty((100_000, 1))
    batching.run_shared(failing, X, OUT)
    assert reported.wait(5.0) and str(errors[0]) == "worker failed"
    ran = threading.Event()
    batching.run_shared(lambda X, OUT, claims: ran.set() or 0, X, OUT)
    assert ran.is_set()
    batching.run_batch(lambda X, OUT: OUT.fill(1.0), X, OUT)  # the workers still serve
    assert (OUT == 1.0).all()


@pytest.mark.parametrize("kind", ["lanes", "points"])
def test_a_batch_kernel_given_the_wrong_shapes_raises_instead_of_reading_past_the_rows(kind):
    # Lane code addresses narrow rows with constant strides: the kernel checks the shapes.
    chunks, batch, X = _chunked(kind)
    with pytest.raises(ValueError, match=r"needs _X of shape \(N, 2\) and _OUT of shape"):
        batch(np.ascontiguousarray(X[:, :1]), np.empty((X.shape[0], 3)))
    with pytest.raises(ValueError, match="does not take"):
        batching.run_shared(chunks, X, np.empty((X.shape[0] + 1, 3)))
    with pytest.raises(ValueError, match="does not take"):
        batching.run_shared(chunks, X, np.empty((X.shape[0], 2)))


def test_lane_code_gives_the_same_bits_for_arrays_with_strides_of_their_own():
    # Constant strides only for C-contiguous arrays; others compile with their own strides.
    chunks, batch, X = _chunked("lanes")
    contiguous, strided = np.empty((X.shape[0], 3)), np.empty((3, X.shape[0])).T
    batch(X, contiguous)
    batch(np.asfortranarray(X), strided)
    assert np.array_equal(strided, contiguous)
