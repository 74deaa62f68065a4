"""Run a batch kernel over the rows of a batch on several threads.

Generated Numba batch kernels are loops compiled with ``nogil=True``: Numba's ``parallel=True``
costs 0.3-0.65 s more compile per kernel (its parallel-loop machinery) for the same speed.
Parallelism comes from here instead, with persistent worker threads. A generated module's
``NAME_chunks`` kernel claims chunks of the batch itself (atomically, in compiled code), so
`run_shared` only starts it on the workers and on the caller: no Python runs between chunks, and
a worker that wakes late (tens of microseconds on a virtual machine) finds fewer chunks left
instead of making the caller wait for it. Other kernels (the tape's) go through `run_batch`,
which cuts the rows into parts that the threads take in turn. The number of threads is
Numba's (``numba.set_num_threads`` applies), and small batches stay on one thread.
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import threading
from collections.abc import Callable

import numpy as np

MIN_ROWS_PER_THREAD = 2048
# Handing a part to another thread costs ~15 us back to back (a queue put, a wake-up, a
# dispatch), more when the other CPU has gone idle; a part is worth it with this much work
# (op-table cost units per row times rows: ~0.1-0.3 ms). Measured: the polynomial's 100,000
# rows (70 us) took 92 us on two threads, so batches that small stay on one.
WORK_PER_THREAD = 1_000_000
PARTS_PER_THREAD = 4
WAIT_S = 0.002  # how long the caller sleeps at a time for a worker's last chunk

_workers: list[queue.SimpleQueue] = []  # each worker thread's inbox
_workers_lock = threading.Lock()


def _forget_workers() -> None:
    """In a forked child: the parent's worker threads do not exist there (fork copies only
    the calling thread), so their inboxes would take parts nobody runs (a batch waiting
    forever) or tasks nobody frees (the arrays they hold, every batch). The child starts its
    own workers on first need; the lock may have been held by a thread that is gone."""
    global _workers_lock
    _workers.clear()
    _workers_lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_workers)


def _serve(inbox: queue.SimpleQueue) -> None:
    while True:
        task, done = inbox.get()
        try:
            task()
        except BaseException as error:  # noqa: BLE001 - raised by the caller, or reported
            if done is None:  # nobody waits for this task: report it, keep serving
                threading.excepthook(threading.ExceptHookArgs(
                    (type(error), error, error.__traceback__, threading.current_thread())))
            else:
                done.put(error)
        else:
            if done is not None:
                done.put(None)


def _inboxes(count: int) -> list[queue.SimpleQueue]:
    """The inboxes of `count` worker threads (started on first need, then kept: daemons that
    wait on a queue cost nothing). A concurrent.futures pool's hand-off took ~50 us."""
    with _workers_lock:
        while len(_workers) < count:
            inbox: queue.SimpleQueue = queue.SimpleQueue()
            threading.Thread(target=_serve, args=(inbox,), daemon=True,
                             name=f"symgraph-batch-{len(_workers)}").start()
            _workers.append(inbox)
        return _workers[:count]


def rows_per_thread(cost: int) -> int:
    """The fewest rows worth a thread of their own for a kernel of `cost` per row."""
    return max(MIN_ROWS_PER_THREAD, WORK_PER_THREAD // max(1, cost))


def thread_count(rows: int, min_rows: int = MIN_ROWS_PER_THREAD) -> int:
    """Threads for a batch of `rows`: Numba's setting, at most one per `min_rows` rows."""
    if rows < 2 * min_rows:
        return 1
    return max(1, min(numba_threads(), rows // min_rows))


def numba_threads() -> int:
    """Numba's thread setting (`numba.get_num_threads`), without starting its threading layer
    (2-15 ms) when it has not started: until then no `set_num_threads` has run, so the
    setting is still ``NUMBA_NUM_THREADS`` (symgraph's batches run on threads of its own)."""
    import numba
    from numba.np.ufunc import parallel

    if not getattr(parallel, "_is_initialized", True):
        return max(1, int(numba.config.NUMBA_NUM_THREADS))
    return numba.get_num_threads()


def run_shared(kernel: Callable[[np.ndarray, np.ndarray, np.ndarray], int], X: np.ndarray,
               OUT: np.ndarray, min_rows: int = MIN_ROWS_PER_THREAD) -> None:
    """``kernel(X, OUT, claims)`` (a generated ``NAME_chunks``) on the caller and on worker
    threads, at least `min_rows` rows a thread, all sharing one `claims` array. The caller
    returns once every chunk is finished; a worker that starts after all were claimed does
    nothing. The kernel returns how many chunks other threads still run after a short spin:
    then the caller sleeps until a worker's call ends and asks again. It returns -1 for
    arrays of the wrong shapes."""
    claims = np.zeros(2, np.int64)  # the next chunk to claim, the chunks finished
    ended: queue.SimpleQueue = queue.SimpleQueue()  # a worker's call of the kernel returned
    threads = thread_count(X.shape[0], min_rows)
    if threads > 1:
        from ..backends.numba.runtime import ATOMIC  # (a NAME_chunks kernel: Numba is loaded)

        # Claims made without Numba's internals are not atomic: the batch stays on one thread.
        threads = threads if ATOMIC else 1
    if threads > 1:
        task = functools.partial(_share, kernel, X, OUT, claims, ended)
        for inbox in _inboxes(threads - 1):
            inbox.put((task, None))
    while (left := kernel(X, OUT, claims)) > 0:
        # A worker still runs a chunk after the kernel's short spin: another process likely
        # holds its CPU. Sleep rather than spin, so that this CPU goes idle and the scheduler
        # can move the worker onto it (a spinning caller would keep that CPU from it).
        with contextlib.suppress(queue.Empty):
            ended.get(timeout=WAIT_S)
    if left < 0:
        raise ValueError(f"{getattr(kernel, '__name__', 'the kernel')} does not take X of shape "
                         f"{X.shape} and OUT of shape {OUT.shape}")


def _share(kernel: Callable[[np.ndarray, np.ndarray, np.ndarray], int], X: np.ndarray,
           OUT: np.ndarray, claims: np.ndarray, ended: queue.SimpleQueue) -> None:
    try:
        kernel(X, OUT, claims)
    finally:
        ended.put(None)


def run_batch(kernel: Callable[[np.ndarray, np.ndarray], None], X: np.ndarray,
              OUT: np.ndarray, min_rows: int = MIN_ROWS_PER_THREAD) -> None:
    """``kernel(X, OUT)`` with the rows split over threads, at least `min_rows` a thread;
    `kernel` must release the GIL and treat rows independently. X and OUT are C-contiguous, so
    every part is too. The rows are cut into `PARTS_PER_THREAD` parts a thread, which the
    threads take in turn until none is left: on a shared machine a thread that another process
    holds up leaves its later parts to the others instead of holding up the whole batch."""
    threads = thread_count(X.shape[0], min_rows)
    if threads == 1:
        kernel(X, OUT)
        return
    count = threads * PARTS_PER_THREAD
    bounds = [X.shape[0] * k // count for k in range(count + 1)]
    parts: queue.SimpleQueue = queue.SimpleQueue()
    for a, b in zip(bounds[:-1], bounds[1:]):
        parts.put((a, b))

    def take_parts() -> None:
        while True:
            try:
                a, b = parts.get_nowait()
            except queue.Empty:
                return
            kernel(X[a:b], OUT[a:b])

    done: queue.SimpleQueue = queue.SimpleQueue()
    for inbox in _inboxes(threads - 1):
        inbox.put((take_parts, done))
    try:
        take_parts()
    finally:
        errors = [done.get() for _ in range(threads - 1)]  # waits for every part
    for error in errors:
        if error is not None:
            raise error
