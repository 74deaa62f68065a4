"""The order of a lane kernel's steps: its segments (runs of one kind of step), within a long
vector segment an order with few live values, and where its loops end.

A lane kernel (backends.numba.batch) runs each segment of a program as one loop over a block
of points. LLVM's register allocator spills what a loop keeps alive, so a segment whose
program order keeps more values alive than the core has vector registers is reordered for
few live values (`few_live`: its wide sums `chained`, then a list schedule). A big program's
segment has thousands of steps, and LLVM's time for one loop grows faster than its length:
a segment longer than CUT_ABOVE is also cut into loops of at most LOOP_STEPS steps where the
fewest values cross (`cut_run`); a crossing value goes through a slot (a store and a load
per point). Reordering changes no result: every step is the same IEEE operation on the same
operands, a chained sum's additions too.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Sequence

from ...ir.ops import OPS
from ...lower.schedule import CONST, NAME, Operand, Program, Step

# FIT, weibull@148 (2,333 vector steps, one core, CPU time): one loop 27.5 s to compile, loops
# of at most 150 steps 14-16 s; loops of at most 400 compiled no faster (18.8 s) and ran
# slower (3.9 vs 1.7 us a point: more spills).
LOOP_STEPS = 150
# Segments up to this many steps keep their order and their one loop, as every lane kernel did
# before (programs of up to 1,200 steps, the families at ~100 operations: fitted there).
CUT_ABOVE = 600
# AVX2's vector registers: a run whose program order keeps no more values alive keeps it.
REGISTERS = 16
# A run of up to CUT_ABOVE steps is reordered only when that keeps at most this share of its
# values alive (summed over its steps): a list schedule moves costly steps (divisions, calls)
# away from the work that hid their latency. Fitted on FIT families at ~100 operations:
# gauss_loglik@24 (0.41: 13.1 -> 11.5 ns a point), quadratic_form@13 (0.21), arrhenius@31
# (0.69) gained; logistic_regression@13 (0.77) and gibbs_mixing@25 (0.79) lost 5-16%. Held
# out: rational@14 (0.91) lost 13-19% reordered; bratu@13 (0.56) and catenary_chain@20
# (0.54) gained 10-20%.
WORTH_REORDERING = 0.75
# Sums and products of more operands than this are chained (`chained`); shorter ones read as
# one line, as in the other kernels (a list schedule gains little from their links).
CHAIN_ABOVE = 4


def _value(operand: Operand) -> str | None:
    return operand.value if operand.kind == NAME else None


def is_vector_step(step: Step) -> bool:
    spec = OPS[step.op]
    second = step.operands[1] if len(step.operands) > 1 else None
    return spec.lane_step(second.value if second is not None and second.kind == CONST else None)


def segments(p: Program, kind: Callable[[Step], Hashable] = is_vector_step,
             kinds: Sequence[Hashable] = (True, False)) -> list[list[Step]]:
    """Steps in a dependency-respecting order, cut into runs of one `kind` (vector or libm
    call; a big lane kernel's vecmath calls are a third, backends.numba.batch.calls_vecmath).

    Kahn's algorithm with one ready queue per kind, each in program order: drain one kind's
    queue (steps made ready meanwhile join it), then go on to the next kind of `kinds` (in
    turn) that has work.
    """
    index = {s.target: k for k, s in enumerate(p.steps)}
    waiting = [0] * len(p.steps)
    users: list[list[int]] = [[] for _ in p.steps]
    for k, s in enumerate(p.steps):
        for name in {_value(o) for o in s.operands} - {None}:
            if name in index:
                waiting[k] += 1
                users[index[name]].append(k)
    ready: dict[Hashable, list[int]] = {k: [] for k in kinds}
    for k, s in enumerate(p.steps):
        if not waiting[k]:
            ready[kind(s)].append(k)
    turn = 0
    runs: list[list[Step]] = []
    while any(ready.values()):
        while not ready[kinds[turn]]:
            turn = (turn + 1) % len(kinds)
        queue, run = ready[kinds[turn]], []
        heapq.heapify(queue)
        while queue:
            k = heapq.heappop(queue)
            run.append(p.steps[k])
            for u in users[k]:
                waiting[u] -= 1
                if not waiting[u]:
                    heapq.heappush(ready[kind(p.steps[u])], u)
        runs.append(run)
        turn = (turn + 1) % len(kinds)
    return runs


def few_live(run: list[Step], p: Program) -> list[Step]:
    """The steps of `run` (its wide sums and products `chained`) in an order with few values
    alive at once: program order or a list schedule (`_greedy`), whichever keeps fewer alive
    on average (`crossings`). Program order puts a gradient's forward sweep before its
    backward one (gauss_loglik@250: 725 values alive at the widest point, 259 scheduled); a
    loop's live values are what LLVM keeps in registers or spills, and what a cut between
    loops (`cut_run`) stores in slots. The same operations on the same operands in the same
    association: the same bits in any order.

    Every size where program order keeps more values alive than REGISTERS, not only long
    runs: FIT gauss_loglik@24 (190 steps, one loop) spilled 47 vectors in program order, 24
    so (13.1 -> 11.5 ns a point)."""
    if max(crossings(run, p)) <= REGISTERS:
        return run  # nothing to spill: LLVM's own order is as good (coulomb@2, reordered
        # though only 6 values were alive: 3.05 -> 4.11 ns a point)
    chains = chained(run)
    scheduled = _greedy(chains, p)
    alive = sum(crossings(scheduled, p)) / max(1, sum(crossings(chains, p)))
    if alive < (1.0 if len(run) > CUT_ABOVE else WORTH_REORDERING):
        return scheduled
    return run


def chained(run: list[Step]) -> list[Step]:
    """`run` with each sum or product of more than CHAIN_ABOVE operands as a chain of two-operand
    steps, left to right as its one line evaluates (``a + b - c`` is ``(a + b) - c``: the same
    bits). A list schedule can then add each term as soon as it is made, where the wide step
    kept every term alive until the last was ready. A link is named after its step
    (``_t9_1``: a leading underscore, which no symbol or temporary has)."""
    out: list[Step] = []
    for s in run:
        if s.op not in ("add", "mul") or len(s.operands) <= CHAIN_ABOVE:
            out.append(s)
            continue
        head = s.operands[0]
        for k, operand in enumerate(s.operands[1:-1], 1):
            link = Operand(NAME, f"_{s.target}_{k}")
            out.append(Step(link.value, s.op, (head, operand)))
            head = link
        out.append(Step(s.target, s.op, (head, s.operands[-1]), s.comment))
    return out


def _greedy(run: list[Step], p: Program) -> list[Step]:
    """A list schedule: of the steps whose operands are ready, the one that ends the most
    values' lives (it is their last reader); ties in program order. (Ties broken depth first,
    or reading a value of `run` first, kept more alive on FIT families: weibull@148 on average
    182 -> 457, arrhenius@313 640 -> 1152, mlp_loss@37 152 -> 368.)"""
    at = {s.target: k for k, s in enumerate(run)}
    users: list[list[int]] = [[] for _ in run]
    readers: dict[str, int] = {}  # unscheduled readers in `run` of a value defined in it
    waiting = [0] * len(run)
    for k, s in enumerate(run):
        for name in {_value(o) for o in s.operands} - {None}:
            if name in at:
                users[at[name]].append(k)
                readers[name] = readers.get(name, 0) + 1
                waiting[k] += 1
    kept = {_value(o) for _, o in p.outputs}  # read beyond `run`: never freed here
    for s in p.steps:
        if s.target not in at:
            kept.update(map(_value, s.operands))

    def score(k: int) -> int:
        return sum(readers.get(name, 0) == 1 and name not in kept
                   for name in {_value(o) for o in run[k].operands} - {None})

    ready = [(-score(k), k) for k, w in enumerate(waiting) if not w]
    heapq.heapify(ready)
    done = [False] * len(run)
    order: list[Step] = []
    while ready:
        negative, k = heapq.heappop(ready)
        if done[k] or -negative != score(k):
            continue  # a stale entry (the step was pushed again with its new score)
        done[k] = True
        order.append(run[k])
        for name in {_value(o) for o in run[k].operands} - {None}:
            if name in readers:
                readers[name] -= 1
                if readers[name] == 1:  # its last reader now frees it
                    for u in users[at[name]]:
                        if not done[u] and not waiting[u]:
                            heapq.heappush(ready, (-score(u), u))
        for u in users[k]:
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(ready, (-score(u), u))
    return order


def crossings(run: list[Step], p: Program) -> list[int]:
    """For each k in 0 .. len(run): how many values of run[:k] run[k:] or the outputs read (the
    slots a cut before run[k] would add)."""
    at = {s.target: k for k, s in enumerate(run)}
    last = dict.fromkeys(at, -1)
    for k, s in enumerate(run):
        for name in map(_value, s.operands):
            if name in at:
                last[name] = k
    for name in map(_value, (o for _, o in p.outputs)):
        if name in at:
            last[name] = len(run)
    change = [0] * (len(run) + 2)
    for name, k in at.items():
        if last[name] > k:  # live from after its step to its last use
            change[k + 1] += 1
            change[last[name] + 1] -= 1
    live, out = 0, []
    for k in range(len(run) + 1):
        live += change[k]
        out.append(live)
    return out


def cut_run(run: list[Step], p: Program) -> list[list[Step]]:
    """`run` in loops of at most LOOP_STEPS steps, each cut where the fewest values cross it
    (between half and all of LOOP_STEPS from the last cut): LLVM's time for one loop grows
    faster than its length (FIT weibull@148, one loop of 2,333 vector steps: 27.5 s; in loops
    of at most 150: 14 s), and a cut costs a slot store and load per crossing value."""
    if len(run) <= CUT_ABOVE:
        return [run]
    live = crossings(run, p)
    pieces, start = [], 0
    while len(run) - start > LOOP_STEPS:
        window = range(start + LOOP_STEPS // 2, start + LOOP_STEPS + 1)
        cut = min(window, key=lambda k: (live[k], -k))
        pieces.append(run[start:cut])
        start = cut
    return [*pieces, run[start:]]
