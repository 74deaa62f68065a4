"""How an interpreted batch is cut into blocks of rows, and why their memory stays put.

The Python backend's NumPy kernel keeps every step's temporary alive until it returns (they
are its locals): a block of `rows` rows of a program of `ops` steps holds ~8 * ops * rows
bytes, and frees them all at once. glibc's malloc hands the top of its heap back to the
system whenever more than its trim threshold lies free there (128 KiB in a new process), so
each block's temporaries were unmapped on return and faulted in again by the next block: on
rational@14 (279 steps, 20,000 points, blocks of 512 rows) 30,000 page faults, 26 ms of a
28 ms batch, and bigger blocks fared no better. glibc raises that threshold to twice the size
of a freed mmap'ed chunk (its dynamic mmap threshold, what any program that frees a big NumPy
array sets off); `keep_heap` does it once a process, with a buffer it never touches (no page
faulted in, ~0.1 ms). rational@14 then takes 8.5 ms in blocks of 512 rows and 4.3 in blocks
of 2,048 (their calls: 279 per block, ~0.5 us each). Elsewhere than glibc it does nothing,
nor where the process set glibc's thresholds itself (mallopt, or a MALLOC_TRIM_THRESHOLD_
variable, which dask's distributed workers set to 64 KiB): those settings stay the user's.

Blocks are as long as fits the kept heap: 2,048 rows up to ~1,500 steps, fewer for longer
programs, never fewer than 256. Measured with the heap kept (Zen 4, 2026-12-07; 13 workloads of
benchmarks/families.py, FIT and VALIDATE, 190-3,727 steps, blocks of 256-4,096 rows): at ~200-
300 steps 2,048 rows took 0.45-0.6x the time of 512 (4,096 no faster on a first batch); at
2,000-3,700 steps 1,024-2,048 rows were best, 4,096 up to 3x slower.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# A freed chunk of this size makes it glibc's mmap threshold (heap allocations up to it) and
# twice it the trim threshold; glibc takes no size above 32 MiB (DEFAULT_MMAP_THRESHOLD_MAX).
KEPT_HEAP_BYTES = 16 << 20
# A block's temporaries stay under the trim threshold: 2 * KEPT_HEAP_BYTES, less a margin for
# what else the process frees meanwhile.
BLOCK_BYTES = 24 << 20
MIN_ROWS, MAX_ROWS = 256, 2048

_kept = [False]


def keep_heap() -> None:
    """Raise malloc's thresholds once a process (see the module's docstring)."""
    if not _kept[0]:
        _kept[0] = True
        np.empty(KEPT_HEAP_BYTES // 8)  # mapped and unmapped, never touched


def block_rows(ops: int) -> int:
    """Rows a block for a program of `ops` steps: a power of two in MIN_ROWS..MAX_ROWS."""
    rows = MAX_ROWS
    while rows > MIN_ROWS and 8 * ops * rows > BLOCK_BYTES:
        rows //= 2
    return rows


def run_blocks(batch: Callable[[np.ndarray, np.ndarray], None], X: np.ndarray,
               OUT: np.ndarray, ops: int) -> None:
    """`batch`, a NumPy kernel of `ops` steps, over X's rows in blocks (into OUT's)."""
    step = block_rows(ops)
    keep_heap()
    for start in range(0, X.shape[0], step):
        batch(X[start:start + step], OUT[start:start + step])
