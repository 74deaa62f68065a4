"""Run a batch kernel over the rows of a batch on several threads.

Generated Numba batch kernels are serial loops compiled with ``nogil=True``: Numba's
``parallel=True`` costs 0.3-0.65 s more compile per kernel (its parallel-loop machinery) for the
same speed. Parallelism comes from here instead: the rows are cut into one contiguous part per
thread and each part runs on its own thread, the last one on the caller's. The number of
threads is Numba's (``numba.set_num_threads`` applies), and small batches stay on one thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

MIN_ROWS_PER_THREAD = 2048
# Handing a part to another thread costs ~50-100 us; a part is worth it with this much work
# (in op-table cost units per row times rows: ~0.3-1 ms), so tiny kernels stay on one thread.
WORK_PER_THREAD = 4_000_000

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            import numba

            _pool = ThreadPoolExecutor(max(1, numba.config.NUMBA_NUM_THREADS - 1),
                                       thread_name_prefix="symgraph-batch")
        return _pool


def rows_per_thread(cost: int) -> int:
    """The fewest rows worth a thread of their own for a kernel of `cost` per row."""
    return max(MIN_ROWS_PER_THREAD, WORK_PER_THREAD // max(1, cost))


def thread_count(rows: int, min_rows: int = MIN_ROWS_PER_THREAD) -> int:
    """Threads for a batch of `rows`: Numba's setting, at most one per `min_rows` rows."""
    if rows < 2 * min_rows:
        return 1
    import numba

    return max(1, min(numba.get_num_threads(), rows // min_rows))


def run_batch(kernel: Callable[[np.ndarray, np.ndarray], None], X: np.ndarray,
              OUT: np.ndarray, min_rows: int = MIN_ROWS_PER_THREAD) -> None:
    """``kernel(X, OUT)`` with the rows split over threads, at least `min_rows` each; `kernel`
    must release the GIL and treat rows independently. X and OUT are C-contiguous, so every
    part is too."""
    threads = thread_count(X.shape[0], min_rows)
    if threads == 1:
        kernel(X, OUT)
        return
    bounds = [X.shape[0] * k // threads for k in range(threads + 1)]
    pool = _workers()
    pending = [pool.submit(kernel, X[a:b], OUT[a:b])
               for a, b in zip(bounds[:-2], bounds[1:-1])]
    try:
        kernel(X[bounds[-2]:], OUT[bounds[-2]:])
    finally:
        for future in pending:
            future.result()  # waits, and re-raises a worker's exception here
