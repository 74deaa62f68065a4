"""Numba batch kernels that run the steps of a program on a block of points at a time.

A per-point loop (over rows, the straight-line body inside) keeps every value in
scalars: LLVM vectorises it only when the body is tiny, and one point's chain of libm calls runs
serially. A lane kernel instead takes a block of `BLOCK` points (fewer for wide rows, see
SLOT_BYTES) and runs each *segment* of the program (a run of steps) as one loop over the block:

* segments of arithmetic only (``+ - * /``, small integer powers, ``sqrt``, comparisons...) are
  loops LLVM vectorises across points, AVX2/AVX-512 wide;
* so are exp, log, pow, tanh, erf, sigmoid, softplus, expm1, log1p, sin, cos, atan, atan2
  and hypot: lane code calls
  symgraph.backends.numba.vecmath's ``vexp``, ``vlog``... (the op table's ``lanes`` templates),
  straight-line code that the runtime's lowering inlines from vecmath itself (in a big kernel,
  `calls_vecmath`, once per shape of step, in a function that the step's own loop calls);
* segments holding libm calls stay scalar, but their iterations are independent points, so the
  CPU overlaps calls that are a dependent chain within one point.

Steps are list-scheduled so that ready steps of one kind run together (few, long segments).
A small vector segment with a vecmath call (`latency_bound`) runs a whole block as its two
halves at once, statement by statement (``lane_loops(..., interleave=(k,))``, k the loop's
number): one point's chain of long-latency steps would leave the core waiting.
A value used outside its segment lives in a *slot*: ``BLOCK`` consecutive floats of one scratch
array ``_T``, addressed as ``_T[offset + _j]`` with literal offsets, which is what lets LLVM prove
the loops free of aliasing without runtime checks. Slots are reused once their value is dead,
so a block's working set is (live values) x BLOCK x 8 bytes (at most ~250 KB, on the stack of
the thread). Inputs are copied into slots by a first loop and outputs out of them by a last one:
strided accesses stay out of the vector loops (the runtime copies whole groups of 8 rows
with vector transposes, runtime.transpose). Rows of at most MAX_CONSTANT_WIDTH columns are
the exception: their strides are constants, and the segments read inputs from _X and store
outputs in _OUT themselves (so _X and _OUT must not overlap).

``NAME_lanes`` is written as plain Python (it runs as it is); the batch kernel compiles it with
the runtime's ``lane_loops`` (symgraph.backends.numba.runtime.lanes), which emits its loops as
LLVM IR directly: Numba's per-line front end and a separate compile of the lane function would
double the compile time.

Results equal the row kernel's bit for bit but for the vecmath steps: every other step is the
same IEEE operation on the same operands (reordering steps changes nothing; no fastmath, so no
FMA contraction or reassociation), and a vecmath function, like libm, is within an ulp of the
true value (the two may round differently). Only the payload or sign of a NaN may differ, which
IEEE 754 leaves unspecified and which no op can turn into a non-NaN. vsin/vcos are exact only
for arguments up to vecmath.SIN_COS_LIMIT, vsinh/vcosh up to vecmath.HYPERBOLIC_LIMIT, vasinh
up to vecmath.ASINH_LIMIT, vpow (x**y but small integer powers) only for finite x > 0 and y
with |y log x| <= vecmath.POW_LIMIT, vatan2 only off zeros and infinities: the lane code sets
a point's flag ``_F[_j]`` where an argument is outside (``abs(argument) > limit``,
``vpowoff(x, y)``; vectorised), and a last loop recomputes the flagged points with the row
kernel's steps (libm; nan arguments give nan either way). So a point's result never depends on
the other points of its batch. Programs without a vector step, and large ones (past
LANE_BUDGET: compile time), keep the per-point loop over the row kernel. Big programs compile
as several small functions (`cut_run`, PART_STEPS), and call their vecmath steps
(CALLS_ABOVE), so compile time stays about linear.

Either way the compiled entry point is ``NAME_chunks(_X, _OUT, _claims)``: it claims chunks of
the batch one at a time (the runtime's ``fetch_add``, an atomic add on ``_claims[0]``), counts
the chunks it finishes in ``_claims[1]``, and returns once every chunk is finished. Threads that
share one ``_claims`` share the batch with no Python between chunks, and a thread that starts
late takes only the chunks that are left: nobody waits for it (symgraph.runtime.batching).
``NAME_batch(_X, _OUT)`` is the whole batch on the calling thread.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import replace

from ...ir.ops import OPS
from ...lower.schedule import NAME, Operand, Program, Step
from ..common import INDENT, operand_text, step_lines
from .order import cut_run, few_live, is_vector_step, segments  # noqa: F401  (theirs)

JIT = '@njit(cache=True, error_model="numpy")'
# Batch kernels are loops over chunks that release the GIL; symgraph.batching shares a batch's
# chunks between threads. Numba's `parallel=True` cost 0.3-0.65 s more compile per kernel.
JIT_BATCH = '@njit(cache=True, error_model="numpy", nogil=True)'

BLOCK = 64  # points per block (32-64 measured best): a slot is 512 bytes, slots stay in L1/L2
CHUNK = 2048  # points per call of the lane code (a few blocks; its scratch is per call)
# Rows of at most this many columns are addressed with constant strides in lane code: LLVM
# vectorises their reads and writes as interleaved loads and stores (linear MSE: 3.07 -> 2.54
# ns a point, then 2.20 without the copies through slots). Wider ones keep the arrays'
# strides: Rosenbrock-10's 10 and 11 columns went from 8.3 to 34 ns a point with constants.
MAX_CONSTANT_WIDTH = 4
# Rows a chunk of the per-point loop holds: about this much work (op-table cost units, ~20-50
# us), so that threads share a batch evenly and a thread's last chunk is short.
CHUNK_WORK = 200_000
# Reads of the finished count (~18 us) a call spends waiting for chunks other threads still
# run before it returns to Python, which sleeps until a worker's call ends and calls again
# (batching.run_shared): a thread held up by another process is not spun for.
SPINS = 1 << 16
# The compile budget, in `lane_weight` (steps, plus VECMATH_WEIGHT more for each step that
# inlines a vecmath function, CALL_WEIGHT more for each one a big kernel calls): chunked lane
# kernels (LOOP_STEPS, PART_STEPS) compile in about 1-2 ms of CPU per unit when they inline
# vecmath (FIT, one core at load ~5: gauss_loglik@250 1,985 units 1.4-2.5 s, mlp_loss@37 6,083
# 8 s, logistic_regression@134 7,232 10 s, weibull@148 10,833 14-16 s, arrhenius@313 12,549
# 13 s; VECMATH_WEIGHT fitted to those), and run 2-6x faster than the tape's lanes or the
# per-point loop that bigger programs get (weibull@148: 1.7-2.5 us a point against the
# tape's 16 us). The budget is ~10 s on an idle core, the price of lanes that SymEngine's
# LLVM kernels (0.3-2 s to compile at ~1,000 operations) cannot match; programs past it
# compile the per-point loop or run on the tape.
# Refitted for called vecmath (CALLS_ABOVE) on FIT families at ~3,000 operations, batch
# kernel CPU time in a fresh process (load 3-6): gauss_loglik@840 6,236 units 4.2 s,
# weibull@463 8,174 7.4 s, logistic_regression@416 9,155 5.1 s, mlp_loss@112 9,433 6.2 s,
# option_portfolio@200 11,521 7.2 s: 0.55-0.9 ms a unit (CALL_WEIGHT 4 fitted to those; 2-5
# apart). The same 13,000 units (~10 s) now take every FIT family at ~3,000 operations but
# two whose programs keep many values alive, where compile time grows faster than the
# weight (register allocation of loops with hundreds of live slots): product_chain@1000
# 17,061 units 40 s, arrhenius@993 22,399 units 41 s; at ~5,000 operations only a few.
# (Before: every FIT family at ~1,000 operations, at ~3,000 none but gauss_loglik.)
# Measured with benchmarks.run at ~3,000 operations (load 4-9 while symgraph ran, 1.5-2x
# SymEngine's), batch 1 core vs SymEngine's LLVM: FIT weibull@463 3.9x, logistic_regression@416
# 2.35x, mlp_loss@112 9.8x, gauss_loglik@840 1.55x; VALIDATE (the tape's lanes before, ~1.0x for
# student_t) student_t@444 2.02x, poisson_glm@533 2.07x, einstein_solid@375 2.17x. Past the
# budget, lanes forced: cubic_eos@74 (VALIDATE) 1.63x (tape 0.38-0.92x), arrhenius@993 (FIT)
# 0.75-1.15x (tape 0.29x); both also past tape.choice.STRAIGHT_MAX_OPS (their row kernels).
LANE_BUDGET = 13_000
VECMATH_WEIGHT = 20
# Bytes of slots a block may use: past about L1, a block has fewer points (at least MIN_BLOCK,
# two AVX-512 vectors), so that wide rows stay in cache. FIT: fpu_chain@38 (153 slots) 111 ->
# 59 ns a point with blocks of 16, fpu_chain@75 836 -> 157 (the per-point loop: 61 and 161).
SLOT_BYTES = 32 * 1024
MIN_BLOCK = 16
# A kernel with a loop run as two interleaved halves (`latency_bound`) may use this many:
# a half of 8 points is one AVX-512 vector, so a block of 16 left the core two serial chains.
# Found in the profile of VALIDATE composition@79 (141 slots: blocks of 32, 291 -> 191 ns a
# point), so that family no longer holds this rule out; the value checked on every FIT and
# VALIDATE workload at ~100 and ~300 operations it changes (in one process, calls alternated,
# 2,048 points): FIT arrhenius@31 71 -> 68, decibel_fit@50 119 -> 124; VALIDATE nbody@11
# 152 -> 146, tiered_cost@33 210 -> 199, cbrt_density@60 220 -> 207, einstein_solid@37
# 157 -> 160. Blocks of at least 32 whatever their bytes lost on FIT arrhenius@93 (271 slots,
# 69 KB: 232 -> 243); 128 KB for every kernel lost on FIT kl_divergence@37 (345 -> 420).
SERIAL_SLOT_BYTES = 64 * 1024
# Every PART_STEPS lines of a lane kernel's loops are a function of their own (runtime.lanes'
# `parts`), which LLVM optimises and allocates registers for apart; long vector segments are
# cut into loops first (backends.numba.order). FIT, weibull@148 (2,333 steps, one core, CPU
# time): one loop in one function 27.5 s; loops of at most 150 steps in functions of 300 lines
# 14-16 s, at the same speed (2.3 vs 1.7-2.5 us a point, load ~5).
PART_STEPS = 300
PARTS_ABOVE = 1200  # lines of loops a kernel keeps in one function (as all did before)
INTERLEAVE_COST = 150  # vector segments up to this cost with a vecmath call: `latency_bound`
SERIAL_SHARE = 0.3  # or whose critical path is this share of their cost (one serial chain)
# Past CALLS_ABOVE units of inline weight, a lane kernel's vecmath steps are each a loop of
# their own over the block, slots in and out, that calls a function compiled once per kernel
# for all its steps of one shape (runtime.lanes' `calls`): LLVM then optimises vexp's body
# once, not once per exp step, and such a step weighs CALL_WEIGHT units, not VECMATH_WEIGHT.
# FIT, one process, both kernels interleaved (load ~5.3): weibull@148 (1,499 steps, 291
# vecmath) compiles in 5.44 -> 1.83 s of CPU and runs at 0.556 -> 0.616 us a point,
# logistic_regression@134 4.56 -> 1.58 s, 0.564 -> 0.557 us; the same bits. Smaller kernels,
# fitted inline (and interleaved: `latency_bound`), keep inlining.
CALLS_ABOVE = 4_000
CALL_WEIGHT = 4

# Ops whose Numba template is arithmetic, an LLVM intrinsic (sqrt, fabs, floor) or a select
# (the table's `vectorises`): loops of them vectorise. So do ops with a `lanes` template
# (vecmath), and small integer powers (products). Everything else calls libm and stays scalar.
# vecmath functions exact only in a range (checked at run time, see above): the flag of a
# point where the step's lane value is not to be trusted, on the step's operands.
SIN_COS_LIMIT = 5.0e7  # vecmath.SIN_COS_LIMIT (a test checks); vecmath itself imports Numba
HYPERBOLIC_LIMIT = 708.0  # vecmath.HYPERBOLIC_LIMIT (the same test)
ASINH_LIMIT = 1.0e150  # vecmath.ASINH_LIMIT (the same test)
# Exact for |x| <= the limit (the tape's opcodes.RANGE_LIMITED names the same constants).
RANGE_LIMITS = {"vsin": SIN_COS_LIMIT, "vcos": SIN_COS_LIMIT, "vtan": SIN_COS_LIMIT,
                "vsinh": HYPERBOLIC_LIMIT, "vcosh": HYPERBOLIC_LIMIT, "vasinh": ASINH_LIMIT}
LIMITED = {**{f: f"abs({{0}}) > {limit!r}" for f, limit in RANGE_LIMITS.items()},
           "vpow": "vpowoff({0}, {1})", "vatan2": "vatan2off({0}, {1})",
           "vpowprev": "vpowprevoff({2})", "vlgamma": "vgammaoff({0})",
           "vdigamma": "vgammaoff({0})"}

I1, I2 = INDENT, INDENT * 2


def vecmath_calls(code: str) -> list[str]:
    """Names of the vecmath functions that lane code calls (``vexp(``...), in first-use order."""
    return list(dict.fromkeys(re.findall(r"\b(v[a-z0-9]+)\(", code)))


def _value(operand: Operand) -> str | None:
    """The name an operand reads (``-t3`` reads ``t3``), or None for a constant."""
    return operand.value if operand.kind == NAME else None


def vecmath_step(s: Step) -> bool:
    """Whether a step's lane code calls a vecmath function."""
    return bool(vecmath_calls(OPS[s.op].render("lanes", [operand_text(o) for o in s.operands])))


def range_tests(s: Step) -> list[str]:
    """The out-of-range tests (`LIMITED`) of the vecmath calls in `s`'s lane code, on its
    operands: where one holds, a point's lane value is not to be trusted."""
    operands = [operand_text(o) for o in s.operands]
    return [LIMITED[f].format(*operands)
            for f in vecmath_calls(OPS[s.op].render("lanes", operands)) if f in LIMITED]


def flag_lines(tests: list[str], width: int = 100) -> list[str]:
    """A loop's out-of-range tests as one statement, ``_F[_j] |= (a or b or ...)``, wrapped
    at `width`. One read-modify-write of the flag a loop: with one per test, LLVM kept each
    load and store of _F[_j] and would not vectorise the loop for AVX2 (it did for AVX-512).
    catenary_chain@20 (20 cosh/sinh tests in one loop), compiled for Zen 3's features on a
    Zen 4: 330 -> 92 ns a point (87 without any flag); for AVX-512, 58.6 -> 57.4."""
    if len(tests) <= 1:
        return [f"{I2}_F[_j] |= {t}" for t in tests]
    head = f"{I2}_F[_j] |= ("
    lines, line = [], head
    for k, test in enumerate(tests):
        piece = test if k == 0 else f" or {test}"
        if len(line) + len(piece) + 1 > width and line != head:
            lines.append(line)
            line = " " * len(head) + piece.lstrip()
        else:
            line += piece
    return [*lines, line + ")"]


def calls_vecmath(p: Program) -> bool:
    """Whether `p`'s lane kernel calls its vecmath steps (one loop each, in a function of its
    own that the kernel's steps of one shape share: runtime.lanes' `calls`) rather than
    inlining them into its loops (see CALLS_ABOVE)."""
    return len(p.steps) + VECMATH_WEIGHT * sum(map(vecmath_step, p.steps)) > CALLS_ABOVE


def lane_weight(p: Program) -> int:
    """What a lane kernel of `p` costs to compile, in units of ~1-2 ms (see LANE_BUDGET)."""
    calls = sum(map(vecmath_step, p.steps))
    inline = len(p.steps) + VECMATH_WEIGHT * calls
    return inline if inline <= CALLS_ABOVE else len(p.steps) + CALL_WEIGHT * calls


def _step_kind(s: Step) -> str:
    return "call" if vecmath_step(s) else "vector" if is_vector_step(s) else "libm"


def uses_lanes(p: Program) -> bool:
    """Lanes for every program with a vector step, tiny ones too, up to LANE_BUDGET.

    Fitted on benchmarks/families.py's FIT families at 10 and 100 operations, validated on its
    VALIDATE half: lanes beat the per-point loop on every one, also where the old rule (vector
    work >= 4 per input or output) kept rows. FIT: fpu_chain@13 31 -> 13 ns a point,
    huber_regression@1 1.9 -> 0.5, quadratic_form@3 2.6 -> 0.9, arrhenius@31 (998 steps, over
    the old 400) 231 -> 46; VALIDATE: morse_chain@2 6.9 -> 1.6, softmax_xent@1 17 -> 8.8,
    minimal_surface@6 2.9 -> 2.0. The suite's polynomial is the same either way (0.25 ns)."""
    return (0 < p.n_steps <= LANE_BUDGET and any(map(is_vector_step, p.steps))
            and lane_weight(p) <= LANE_BUDGET)


def latency_bound(p: Program, run: list[Step]) -> bool:
    """Whether a vector segment is small and holds a vecmath call: one point's chain of
    long-latency steps (exp -> divide -> log -> pow...) then leaves the core idle, and running
    the block as two interleaved halves (runtime.lanes' `interleave`) gives it two chains.

    Fitted on benchmarks/families.py's FIT families at ~10 and ~100 operations (two halves for
    every segment, against one): weibull@1 7.0 -> 5.1 ns a point, arrhenius@3 4.0 -> 3.4,
    gauss_loglik@1 1.30 -> 1.15, logistic_regression@1 4.5 -> 4.2; arithmetic-only segments
    lost (fpu_chain@1 0.87 -> 1.06, lennard_jones@1, coulomb@2, huber_regression@1), and so
    did big ones (cost over ~500: weibull@14 44 -> 49, arrhenius@31 34 -> 42; register
    pressure), hence the vecmath call and INTERLEAVE_COST. A bigger segment is still latency
    bound when it is one serial chain: its critical path at least SERIAL_SHARE of its cost.

    SERIAL_SHARE fitted on synthetic chains (w independent chains of sin/cos/erf/exp(-u^2)
    steps, cost ~600; value+gradient, one core): critical path / cost 0.57-0.59 (w = 1) two
    halves 83 -> 59 and 37 -> 28 ns a point, 0.31 (w = 2) 72 -> 58, 0.22 and 0.12 (w = 3, 8)
    even (70 -> 70, 48 -> 50). No FIT family's segment above INTERLEAVE_COST reaches it (their
    whole programs: at most 0.17). VALIDATE: composition@26 (cost 463, 0.75) 79 -> 46 ns."""
    if not any(map(vecmath_step, run)):
        return False
    cost = replace(p, steps=tuple(run)).cost
    return cost <= INTERLEAVE_COST or _critical_path(p, run) >= SERIAL_SHARE * cost


def _critical_path(p: Program, run: list[Step]) -> int:
    """The costliest chain of dependent steps in `run` (each weighed as `Program.cost`)."""
    ends: dict[str, int] = {}
    for s in run:
        ends[s.target] = replace(p, steps=(s,)).cost + max(
            (ends.get(name, 0) for name in map(_value, s.operands) if name), default=0)
    return max(ends.values(), default=0)


def _slots(p: Program, runs: list[list[Step]], direct_inputs: bool = False,
           direct_outputs: bool = False) -> dict[str, int]:
    """Slot of every value read outside the segment that defines it (inputs: segment -1,
    outputs: read by segment len(runs)), but inputs the segments read from _X directly and
    outputs they store in _OUT directly. Linear scan; the lowest free slot is reused first."""
    defined = {} if direct_inputs else {name: -1 for name in p.inputs}
    for k, run in enumerate(runs):
        for s in run:
            defined[s.target] = k
    last: dict[str, int] = {}
    for k, run in enumerate(runs):
        for s in run:
            for name in map(_value, s.operands):
                if name in defined and defined[name] != k:
                    last[name] = max(last.get(name, k), k)
    for operand in map(_value, (o for _, o in p.outputs)):
        if operand in defined and not (direct_outputs and defined[operand] >= 0):
            last[operand] = len(runs)
    born: dict[int, list[str]] = {}
    dies: dict[int, list[str]] = {}
    for name in defined:  # program order: deterministic
        if name in last:
            born.setdefault(defined[name], []).append(name)
            dies.setdefault(last[name], []).append(name)
    slot: dict[str, int] = {}
    free: list[int] = []
    count = 0
    for k in range(-1, len(runs) + 1):
        # A segment loads what it reads before it stores what it defines, so a value that
        # dies here may hand its slot to one born here.
        for name in dies.get(k, []):
            heapq.heappush(free, slot[name])
        for name in born.get(k, []):
            if free:
                slot[name] = heapq.heappop(free)
            else:
                slot[name], count = count, count + 1
    return slot


def lane_kernel_lines(p: Program) -> list[str]:
    """The lane kernel, whatever the program's size (`batch_kernel_lines` chooses)."""
    called = calls_vecmath(p)
    pieces: list[tuple[list[Step], bool]] = []  # (steps of a loop, whether a vecmath call)
    for run in (segments(p, _step_kind, ("vector", "call", "libm")) if called else segments(p)):
        if called and vecmath_step(run[0]):
            pieces += [([s], True) for s in run]
        else:
            pieces += [(piece, False) for piece in cut_run(few_live(run, p), p)]
    runs = [run for run, _ in pieces]
    widths = {name: width for name, width in (("_X", len(p.inputs)), ("_OUT", len(p.outputs)))
              if width <= MAX_CONSTANT_WIDTH}
    # Narrow rows are read and written where the segments need them: vector loads and stores
    # of constant stride, no copy through slots (linear MSE: 2.53 -> 2.20 ns a point).
    direct_in, direct_out = "_X" in widths, "_OUT" in widths
    slot = _slots(p, runs, direct_in, direct_out)
    count = max(slot.values(), default=0) + 1
    block = BLOCK
    most = SERIAL_SLOT_BYTES if any(not call and latency_bound(p, run)
                                    for run, call in pieces) else SLOT_BYTES
    while block > MIN_BLOCK and count * block * 8 > most:
        block //= 2
    column = {name: k for k, name in enumerate(p.inputs)} if direct_in else {}
    stored: set[str] = set()  # outputs a segment stores itself
    results = [operand_text(o) for _, o in p.outputs]

    def cell(name: str) -> str:
        return f"_T[{slot[name] * block} + _j]"

    loops: list[int] = [0]  # for-loops written so far
    parts: list[int] = [0]  # the first loop of each function (`PART_STEPS`)
    size = [0]  # statements in the current function
    lines_in_loops = [0]
    halves: list[int] = []  # those run as two interleaved half-blocks (`latency_bound`)
    calls: list[int] = []  # those of a vecmath step called (`calls_vecmath`)

    def loop(body: list[str], run: list[Step] | None = None) -> list[str]:
        if not body:
            return []
        if run is not None and latency_bound(p, run):
            halves.append(loops[0])
        if size[0] and size[0] + len(body) > PART_STEPS:
            parts.append(loops[0])
            size[0] = 0
        size[0] += len(body)
        lines_in_loops[0] += len(body)
        loops[0] += 1
        return [f"{I1}for _j in range(_m):", *body]

    limited = {s.target for s in p.steps if range_tests(s)}
    lines = [f"def {p.name}_lanes(_X, _OUT, _T{', _F' if limited else ''}, _s, _m):",
             f"{I1}# Points _s .. _s + _m - 1; a value crossing segments lives in _T[slot * "
             f"{block} + _j]."]
    if limited:
        lines.append(f"{I1}# _F[_j]: point _j has a sin/cos argument beyond vecmath's exact range")
    lines += loop([f"{I2}{cell(name)} = _X[_s + _j, {k}]"
                   for k, name in enumerate(p.inputs) if name in slot]
                  + ([f"{I2}_F[_j] = False"] if limited else []))
    for run, call in pieces:
        mine = {s.target for s in run}
        reads = dict.fromkeys(name for s in run for name in map(_value, s.operands)
                              if (name in slot or name in column) and name not in mine)
        body = [f"{I2}{name} = {cell(name) if name in slot else f'_X[_s + _j, {column[name]}]'}"
                for name in reads]
        body += step_lines(replace(p, steps=tuple(run)), "lanes", I2)
        body += flag_lines(list(dict.fromkeys(
            flag for s in run if s.target in limited for flag in range_tests(s))))
        body += [f"{I2}{cell(s.target)} = {s.target}" for s in run if s.target in slot]
        if direct_out:
            body += [f"{I2}_OUT[_s + _j, {k}] = {o}" for k, o in enumerate(results)
                     if o in mine]
            stored |= mine
        if call:
            calls.append(loops[0])
        lines += loop(body, None if call else run)

    def output(o: str) -> str:
        return cell(o) if o in slot else f"_X[_s + _j, {column[o]}]" if o in column else o

    lines += loop([f"{I2}_OUT[_s + _j, {k}] = {output(o)}"
                   for k, o in enumerate(results) if o not in stored])
    lines += loop([f"{I2}if _F[_j]:  # again with libm's sin/cos (the row kernel's steps)",
                   f"{I2}{I1}{p.name}_steps(_X[_s + _j], _OUT[_s + _j])"] if limited else [])
    return lines + ["", "", f"_{p.name}_lanes = lane_loops({p.name}_lanes, {p.name}_steps, "
                    f"slots={count * block}, "
                    f"block={block}, chunk={CHUNK}, widths={widths}"
                    + (f", interleave={tuple(halves)}" if halves else "")
                    + (f", calls={tuple(calls)}" if calls else "")
                    + (f", parts={tuple(parts)}" if len(parts) > 1 and lines_in_loops[0] >
                       PARTS_ABOVE else "") + ")", "", "",
                    *_chunks_kernel(p, CHUNK, [f"_{p.name}_lanes(_X, _OUT, _c)  # {p.name}_lanes "
                                               f"on each block of {block} points"], widths)]


def point_kernel_lines(p: Program) -> list[str]:
    """A loop calling the row kernel on each point."""
    rows = max(1, min(CHUNK, CHUNK_WORK // max(1, p.cost)))
    # Views of the chunk, indexed from 0: indices LLVM can prove non-negative need no
    # wraparound code (`_X[_c * rows + _k]` took twice as long: _c comes from an atomic add).
    return _chunks_kernel(p, rows, [f"_x, _o = _X[_c * {rows}:_c * {rows} + {rows}], "
                                    f"_OUT[_c * {rows}:_c * {rows} + {rows}]",
                                    "for _k in range(_x.shape[0]):",
                                    f"{I1}{p.name}_row(_x[_k], _o[_k])"])


def _chunks_kernel(p: Program, rows: int, chunk: list[str], widths: dict[str, int] | None = None
                   ) -> list[str]:
    """``NAME_chunks`` (`chunk`: the lines that run chunk _c, `rows` rows) and ``NAME_batch``.
    The kernel checks that it stays inside the arrays: row lengths its lane code takes as
    constants (`widths`) exactly, others as lower bounds. Once LLVM knew a wide row's exact
    length, it copied rows with gathers and scatters (Rosenbrock-10: 9 -> 35 ns a point).
    NAME_batch checks every shape exactly."""
    n, m = len(p.inputs), len(p.outputs)
    checks = ["_OUT.shape[0] != _X.shape[0]"] + [
        f"{name}.shape[1] != {widths[name]}" if name in (widths or {}) else
        f"{name}.shape[1] < {width}" for name, width in (("_X", n), ("_OUT", m))]
    return [JIT_BATCH, f"def {p.name}_chunks(_X, _OUT, _claims):",
            f"{I1}if {' or '.join(checks)}:",
            f"{I2}return -1  # not this kernel's shapes",
            f"{I1}_n = (_X.shape[0] + {rows - 1}) // {rows}  # chunks of {rows} points",
            f"{I1}_c = fetch_add(_claims, 0)",
            f"{I1}while _c < _n:",
            *[I2 + line for line in chunk],
            f"{I2}fetch_add(_claims, 1)",
            f"{I2}_c = fetch_add(_claims, 0)",
            f"{I1}_spins = 0",
            f"{I1}while load_acquire(_claims, 1) < _n and _spins < {SPINS}:",
            f"{I2}_spins += 1  # other threads' chunks",
            f"{I1}return _n - load_acquire(_claims, 1)",
            "", "",
            f"def {p.name}_batch(_X, _OUT):",
            f'{I1}"""The whole batch on this thread."""',
            f"{I1}if (_X.shape[1:] != ({n},) or _OUT.shape != (_X.shape[0], {m})",
            f"{I2}{I1}or {p.name}_chunks(_X, _OUT, np.zeros(2, np.int64)) < 0):",
            f'{I2}raise ValueError(f"{p.name}_batch needs _X of shape (N, {n}) and _OUT of '
            f'shape (N, {m}), "',
            f'{I2}                 f"got {{_X.shape}} and {{_OUT.shape}}")']


def batch_kernel_lines(p: Program) -> list[str]:
    """Source lines of ``{p.name}_chunks(_X, _OUT, _claims)`` and ``{p.name}_batch(_X, _OUT)``
    (and the ``{p.name}_lanes`` they run): rows of `_X` are points, rows of `_OUT` their
    outputs. Needs ``{p.name}_row`` beside it."""
    return lane_kernel_lines(p) if uses_lanes(p) else point_kernel_lines(p)
