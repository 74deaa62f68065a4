"""The choice between a straight-line module and the tape, by program size (imports nothing of
the tape itself: choosing costs no interpreter load)."""

from __future__ import annotations

from collections.abc import Sequence

from ...lower.schedule import Program

STRATEGIES = ("auto", "straight", "tape")
# Measured with benchmarks/scale.py: a straight-line Numba kernel compiles in ~0.2 ms per
# operation for the row and ~0.3 ms for the batch (~2 s at this size, 4,517 ops: 0.95 s + 1.2 s;
# ~9 s at 13,000); a tape builds in ~3 us per instruction with nothing to compile (its
# interpreter loads from Numba's cache in ~0.4 s) and evaluates ~3x slower per point.
TAPE_THRESHOLD_OPS = 4_000


def choose_strategy(programs: Sequence[Program], strategy: str = "auto") -> str:
    """``"straight"`` or ``"tape"``: `strategy` itself, or for ``"auto"`` the tape when the
    largest program has more than `TAPE_THRESHOLD_OPS` operations, where a straight-line Numba
    kernel would take longer to compile than the tape takes to build and run many times."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {list(STRATEGIES)}")
    if strategy != "auto":
        return strategy
    largest = max((p.op_count for p in programs), default=0)
    return "tape" if largest > TAPE_THRESHOLD_OPS else "straight"
