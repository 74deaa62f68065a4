"""Timing helpers: medians over repeats (timeit), a time box for slow setups, thread control,
and the gradient check every peer passes before its times count.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import time
import timeit
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

CHECK_RTOL = 1e-8
CALL_TARGET_S = 0.02  # one timeit repeat of a 1-point call runs at least this long
BATCH_TARGET_S = 0.05  # one repeat of a batch timing runs about this long (or one call)


STAGE = [""]  # the setup stage running now, named in time-limit messages


class TimeLimit(BaseException):
    """Raised by the time box. A BaseException, so libraries catching Exception (Numba wraps
    errors from its compiler) let it through."""


@contextlib.contextmanager
def time_box(seconds: float | None) -> Iterator[None]:
    """Interrupt the block after `seconds` (SIGALRM: pure-Python work such as SymPy's `diff`
    stops at once; a long C call stops when it returns to Python)."""
    if not seconds or not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum, frame):
        raise TimeLimit(f"> {seconds:g} s (in {STAGE[0] or 'setup'})")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def stopwatch(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def stage(setup: dict[str, float], name: str, fn: Callable[[], object]) -> Any:
    """Run one setup stage, recording its seconds in `setup` under `name`."""
    STAGE[0] = name
    setup[name], result = stopwatch(fn)
    STAGE[0] = ""
    return result


class Timing(NamedTuple):
    median: float
    best: float


def per_call(fn: Callable[[], object], repeats: int) -> Timing:
    """Seconds per call of `fn` (median and best of `repeats`), each repeat looping long enough
    to time reliably."""
    fn()  # warm up (a first call may compile)
    timer = timeit.Timer(fn)
    number = 1
    while True:  # like Timer.autorange, with a shorter target
        elapsed = timer.timeit(number)
        if elapsed >= CALL_TARGET_S or number >= 1 << 20:
            break
        number = max(number * 2, int(number * CALL_TARGET_S / max(elapsed, 1e-9) * 1.2))
    times = [t / number for t in timer.repeat(repeat=max(1, repeats), number=number)]
    return Timing(statistics.median(times), min(times))


def per_batch(fn: Callable[[], object], repeats: int, budget_s: float = 8.0) -> Timing:
    """Seconds of one batch call, median and best of `repeats` after a warm-up call; each
    repeat is the mean of as many calls as fill BATCH_TARGET_S (one for slow batches), so a
    sub-millisecond batch is timed over a stretch long enough for the machine's other work to
    average out. Fewer repeats (at least one) when the calls are slow, so slow peers fit the
    run's time."""
    first, _ = stopwatch(fn)
    number = max(1, min(1000, round(BATCH_TARGET_S / max(first, 1e-9))))
    times = []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
        if sum(times) * number + first > budget_s:
            break
    return Timing(statistics.median(times), min(times))


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


ALL_CORES = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def pin_process(cpus: list[int]) -> None:
    """Pin every thread of this process (thread pools of JAX, PyTorch...) to `cpus`: the way
    to give a library "1 core" when it has no thread setting that can change after import."""
    if not hasattr(os, "sched_setaffinity"):
        return
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(tid), cpus)


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max(|want|, 1): scaled by the gradient's size, so tiny entries that
    are rounding noise around zero do not fail a correct gradient."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if got.shape != want.shape:
        return float("inf")
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(want))):
        return 0.0 if np.array_equal(got, want, equal_nan=True) else float("inf")
    return float(np.max(np.abs(got - want), initial=0.0) / max(np.max(np.abs(want)), 1.0))
