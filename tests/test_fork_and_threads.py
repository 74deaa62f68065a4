"""Issue 21, concurrency: threads building and compiling one expression at once get one
function and the serial numbers; a child forked after threaded batches (every strategy) runs
its own batches to the right numbers, neither hanging (the tape's parts went to the parent's
workers, which the child does not have) nor leaking (the straight-line kernels' tasks piled up
in those workers' inboxes). Forks run in multiprocessing's 'fork' context with a timeout, so a
hang fails the test instead of blocking the run."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime import batching

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")

ROWS = 60_000  # enough rows for two threads at the MLP's cost (runtime.batching)


def _mlp(x, y):
    u = x
    for i in range(12):
        u = sg.tanh(u * (0.5 + 0.01 * i) + y * 0.3)
    return u


@pytest.fixture(scope="module")
def points():
    return np.random.default_rng(12).uniform(-1.0, 1.0, (ROWS, 2))


def _child(fn, X, want, answers):
    results = [fn.value_and_grad(X)[1] for _ in range(3)]
    # A worker the scheduler has not yet run still holds its last task for a moment (the
    # calling thread may have claimed every chunk itself): a leak is a task that stays.
    deadline = time.monotonic() + 5.0
    while (pending := sum(inbox.qsize() for inbox in batching._workers)) and (
            time.monotonic() < deadline):
        time.sleep(0.01)
    answers.put((all(np.array_equal(r, want) for r in results), pending))


@pytest.mark.parametrize("backend, strategy", [("numba", "straight"), ("numba", "tape"),
                                               ("numba", "auto"), ("python", "auto")])
def test_a_forked_child_runs_batches_after_threaded_ones_without_hanging_or_leaking(
        points, backend, strategy):
    x, y = sg.symbols("x y")
    fn = sg.compile(_mlp(x, y), [x, y], backend=backend, strategy=strategy)
    want = fn.value_and_grad(points)[1]  # threaded in this process (on 2+ cores)
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    child = context.Process(target=_child, args=(fn, points, want, answers))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail(f"the forked child hung on its batch ({backend}, {strategy})")
    assert child.exitcode == 0
    equal, pending = answers.get(timeout=10)
    assert equal and pending == 0


def test_a_forked_child_starts_its_own_batch_workers():
    batching._inboxes(2)  # the parent's workers, as a threaded batch leaves them
    context = multiprocessing.get_context("fork")
    answers = context.Queue()

    def child():
        before = len(batching._workers)
        out = np.empty(8)
        batching.run_batch(lambda X, OUT: OUT.__setitem__((slice(None), 0), 2.0 * X[:, 0]),
                           np.arange(8.0)[:, None], out[:, None], min_rows=1)
        answers.put((before, out.tolist()))

    process = context.Process(target=child)
    process.start()
    process.join(30)
    if process.is_alive():
        process.kill()
        process.join()
        pytest.fail("run_batch hung in the forked child")
    before, out = answers.get(timeout=10)
    assert before == 0 and out == [2.0 * k for k in range(8)]


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_threads_building_and_compiling_one_expression_get_the_serial_answer(backend, tmp_path):
    barrier = threading.Barrier(4)
    found: list = [None] * 4

    def work(k):
        barrier.wait()
        x, y = sg.symbols("x y")  # each thread builds the expression from scratch
        expr = sg.exp(-(x * x + y * y) / 3.0) * sg.sin(3.0 * x * y) + sg.cbrt(x + 2.0)
        fn = sg.compile(expr, [x, y], backend=backend, cache_dir=tmp_path,  # a fresh module
                        strategy="straight" if backend == "numba" else "auto")
        found[k] = (expr, fn.value_and_grad(0.4, -0.7))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    expr, (value, gradient) = found[0]
    for other, (v, g) in found[1:]:
        assert other is expr and v == value and np.array_equal(g, gradient)
    x, y = sg.symbols("x y")
    serial = sg.compile(expr, [x, y], backend="python")
    assert serial.value_and_grad(0.4, -0.7)[0] == value
