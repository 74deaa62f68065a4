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
# ... unless the big programs' batches get lane kernels (backends.numba.batch.LANE_BUDGET):
# chunked lane kernels compile linearly and run several times faster than the tape (FIT
# arrhenius@313, 10,032 operations: lanes 1.6 us a point, SymEngine's LLVM 8.8 us), up to
# STRAIGHT_MAX_OPS: past it the row kernel alone compiles for more than ~3 s (see above).
STRAIGHT_MAX_OPS = 12_000


def choose_strategy(programs: Sequence[Program], strategy: str = "auto") -> str:
    """``"straight"`` or ``"tape"``: `strategy` itself, or for ``"auto"`` the tape when a
    program has more than `TAPE_THRESHOLD_OPS` operations and is too big for a lane kernel,
    where a straight-line Numba kernel would take longer to compile than the tape takes to
    build and run many times."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {list(STRATEGIES)}")
    if strategy != "auto":
        return strategy
    big = [p for p in programs if p.op_count > TAPE_THRESHOLD_OPS]
    if not big:
        return "straight"
    from ..numba.batch import uses_lanes  # (plain Python: imports no Numba)

    lanes = all(p.op_count <= STRAIGHT_MAX_OPS and uses_lanes(p) for p in big)
    return "straight" if lanes else "tape"
