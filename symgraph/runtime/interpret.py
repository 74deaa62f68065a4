"""Interpret first: a compiled function's first calls run in plain Python (a `math` kernel per
point, NumPy per batch: the Python backend's module for the same programs), and its Numba
kernels are compiled, or loaded from Numba's cache, only once that has paid.

Compiling a straight-line Numba kernel costs 0.2-1.5 s; SymEngine's LLVM takes 6-250 ms for
the same expressions, and a user who evaluates a formula a few times never gets that time
back. So `strategy="auto"` starts on the interpreter, counts the work it does there, and
switches when the time the interpreter has lost against the compiled kernel reaches what the
switch costs (a compile, or a load when Numba's cache has the kernels): the ski-rental rule,
never more than twice the better of the two choices made in advance. A single batch big
enough to lose that much on its own switches at once. The counts are of work (calls,
points and operations), never of clock time, so the same calls switch at the same point in
every run; what a kernel returns does not depend on it beyond rounding (NumPy's and libm's
exp/log differ in the last bit; one-point kernels use libm either way).

The constants are fitted to the FIT families of benchmarks/families.py and checked on the
VALIDATE families (`python -m benchmarks.setup`, which prints both; the costs are per point,
one thread, on the 2-core x86-64 machine of benchmarks/results/setup.md).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.ops import OPS
from .blocks import block_rows, run_blocks

# Interpreted, per point: a `math` row kernel costs ~ROW_CALL_NS + ROW_NS_PER_OP * ops; a NumPy
# batch ~BATCH_CALL_NS_PER_OP * ops per block of rows plus BATCH_NS_PER_OP per operation and
# point. Compiled: a row call ~0.3 us (the call path) plus ~0.5 ns per operation; a batch
# ~COMPILED_NS_PER_OP per operation and point. (The batch constants were refitted since: below.)
# Fitted with `python -m benchmarks.setup --fit
# --families fit` (value+gradient programs of 15-3,750 operations, 20,000-point batches, one
# core; two runs, at load average ~4 and ~8 on 2 cores, where everything ran up to 2-3x
# slower): interpreted rows 0.5-88 us (1.0-255 us loaded), batches in blocks 2.2-13.5 ns per
# operation and point (median 3.7, loaded); compiled rows 0.3-4 us, batches 0.04-3.7 ns.
# Held out (`--families validate`, loaded, unblocked batches): rows 0.9-477 us, batches
# 0.9-16 ns, compiled batches 0.08-5.1 ns: the same ranges.
INTERP_ROW_CALL_NS, INTERP_ROW_NS_PER_OP = 300.0, 20.0
# ... plus what the API's checked call path costs against the compiled function's one-point
# path (runtime.points): refitted after the merge with the one-point functions on 6 FIT
# workloads (gauss_loglik@1/@24, weibull@14, morse_chain@2, arrhenius@31, logistic_regression@1,
# load ~5): the real loss per call was 0.87-27.5 us, ~(700 - 300) + 200 per input + 25 per
# operation ns (the model above alone said 0.2-19 us: a switch 3-5x too late for small ones).
INTERP_ROW_API_NS, INTERP_ROW_NS_PER_INPUT, INTERP_ROW_API_NS_PER_OP = 400.0, 200.0, 5.0
# ... and a `value_and_grad_floats` call loses more than that: interpreted, it is the checked
# value_and_grad plus its own checks and tuple; compiled, it is ~300 ns cheaper than
# value_and_grad's. Measured on 7 FIT workloads (2026-12-07, Zen 4, load ~1-2; interpreted
# against compiled, each kept on its path): 950-1,740 ns a call more than value_and_grad's
# loss, ~950 + 25 per input (gauss_loglik@1 +979, logistic_regression@13 +1,041,
# product_chain@33 +1,739). Uncounted, a loop of floats calls switched ~2x too late. Held
# out (5 VALIDATE workloads, the same run): +1,129 to +2,025 measured, 0.63-0.95 of this
# count (worst morse_chain@13: 2,025 against 1,275), never above it.
FLOATS_ROW_NS, FLOATS_ROW_NS_PER_INPUT = 950.0, 25.0
# Batches refitted once their blocks stopped faulting in fresh pages (runtime.blocks; FIT families
# at ~10, ~100 and ~1,000 operations, value+gradient programs of 12-9,439, one core, Zen 4, load
# ~1, 2026-12-07): interpreted 0.6-1.6 ns per operation and point at <= 1,000 operations (3.7 with
# sin/cos or erf; was 2.2-13.5), compiled 0.03-0.43 (median ~0.2). NumPy's call is ~500 ns, and
# beyond it ordinary ops take ~0.6 ns an element (an add 0.2, exp 0.8), counted per operation, not
# by `cost` (a fit by cost gave a negative weight); ops far slower in NumPy carry their own
# `np_ns`. Longer programs lose more per operation than that (cache misses across their
# temporaries: 1.5-5x at 2,000-9,400 operations), hence BIG_PROGRAM_OPS's power law. Measured loss
# over the model's: FIT 0.58-1.89 (median 1.03) at <= 1,000 operations, 0.48-1.73 (0.91) beyond;
# VALIDATE 0.32-2.29 (0.93; nbody@6 the worst) and 0.35-1.52 (0.82), leaving out the 10 workloads
# of lgamma/digamma, whose np.vectorize `np_ns` (Zen 3's) is 4-5x this machine's (0.20-0.24: they
# switch at their first batch either way).
INTERP_BATCH_CALL_NS_PER_OP, INTERP_BATCH_NS_PER_OP = 500.0, 0.6
# ... and a function's first interpreted batch pays more, per operation: its first blocks
# touch their temporaries for the first time (page faults, cold caches: fisher_z@75's first
# block 11.7 ms, the third 5.2, later ones ~3.4; the module itself is imported by the first
# point, interpreted before it in both ways measured here). Held out (the suite at ~300 value
# operations, value+gradient programs of 479-894, Zen 4, 2026-12-07 19:22, each first batch
# forced both ways in three warm processes): interpreting cost 5.0-16.0 ms more than loading
# (median 11.7) where the model above said 1-4 ms less, so all 13 interpreted and took 21-44
# ms against loads of 14-29; 0.015 ms an operation makes up the median.
FIRST_INTERP_MS_PER_OP = 0.015
BIG_PROGRAM_OPS, BIG_PROGRAM_POWER = 1000, 0.75
COMPILED_ROW_CALL_NS, COMPILED_ROW_NS_PER_OP, COMPILED_NS_PER_OP = 300.0, 0.5, 0.2
# What switching costs: Numba's compile of a kernel (FIT: rows 40-1,150 ms at load ~4 and
# 85-2,000 ms at ~8 for 15-3,750 operations; batch chunk kernels 150-2,400 ms, but none for
# programs whose batches run on the tape's lanes), and the first compile of a process pays
# Numba's own set-up (its typing and target contexts, ~0.4 s). A load from Numba's cache reads
# and links each kernel's machine code (LOAD_MS + LOAD_MS_PER_OP * ops), and the first load of
# a process imports the module with symgraph's Numba runtime and vecmath (Numba's target
# context with them) and starts Numba's runtime from the copy backends.numba.startup keeps.
# Fitted on the 14 FIT families at ~100 operations in warm processes at load average 4-6,
# each run twice both ways: loading took 32-58 ms in all, ~32 + 0.018 per operation of the
# value+gradient program beyond the build; the interpreted first batch (20,000 points) 17-82 ms,
# ~2.9 ns per point and unit of `Program.cost` (rms error 9.7 ms, against 15.6 per operation:
# hence the batch loss counts cost, not operations).
# Refitted once a warm process stopped importing the lowering modules and making vecmath's
# dispatchers (2026-12-02, load ~1, warm CPU per workload, interpreted first batch against
# loading): the first load now takes ~12-18 ms beyond the build. FIT, ~100 operations:
# option_portfolio@6 26.5 ms interpreted / 18.2 loaded, mlp_loss@4 23.2 / 18.1,
# quadratic_form@13 33.6 / 16.6, gauss_loglik@24 9.5 / 14.5; the rule takes the faster side on
# all four for FIRST_LOAD_MS in 10.8-19.7 ms (30 before: it interpreted the first three).
# VALIDATE: cubic_eos@10 32 / 21.5, composition@26 36.8 / 22.0, student_t@14 9.6 / 24.5 right;
# relu_network@4 24.8 / 16.3 still interpreted (its NumPy batch is slower than predicted).
# Checked again once loading got cheaper (branch warm3, 2026-12-02 02:20-02:33, load 8-11;
# each workload's first batch forced both ways in warm processes, medians of 4): FIT, ~100
# operations, the rule takes the faster side on 13 of 14 for FIRST_LOAD_MS in 18.5-19.8 ms
# and on 10 with 15 (logistic_regression@13, weibull@14, gibbs_mixing@25 load, ~5 ms slower
# than interpreting; huber_regression@14 is a 0.4 ms tie either way). VALIDATE, 10 families:
# 8 right with 15, 6 with 19 (composition@26's batch, 42 ms interpreted, is predicted 24;
# tiered_cost@11 8 ms). Kept at 15: the held-out families and the quiet refit above agree on
# it; the loaded machine's FIT figures alone would move it to 19.
# Refitted once the first load stopped compiling the JIT engine's own module (branch warm4,
# 2026-12-02 04:59-05:03, load 2-5; each workload's first batch forced both ways, medians of 4
# warm processes): FIT, ~100 operations, summing what the wrong choices lose: 7.5 ms with
# 15 (weibull@14 loads, 4.2 ms slower than interpreting; huber_regression@14 and coulomb@6
# interpret, 2.6 and 0.7 slower), 3.3 ms for FIRST_LOAD_MS in 16.6-18.1 (huber and coulomb
# alone). VALIDATE, all 19 families at ~100 operations, checked: 12.9 ms lost with 15
# (poisson_glm@17, einstein_solid@12, bond_angles@10 load; relu_network@4 interprets: its
# NumPy where/maximum are slower than their cost says), 11.9 with 17 (relu_network@4,
# tiered_cost@11 and nbody@6 interpret: 4.3, 6.2 and 1.4 ms slower): about even. Hence 17,
# the FIT families' choice; the rule's NumPy-time error (+-4 ms at ~100 operations), not
# the constant, is what is left (the A/B in benchmarks/results/setup.md).
# Refitted once NumPy's select was weighed (np_ns of where and the comparisons, timed apart:
# the piecewise families' batches were predicted 5-10 ms short) and warm loads got cheaper
# (2026-12-02 07:57-08:05, load ~1; each workload's first batch forced both ways, medians of
# 4 warm processes): FIT, summed loss of the wrong choices 20.7 ms with the old weights and
# 17, 7.7 with the new and 14-15 (weibull@14 and gibbs_mixing@25 load, 4.0 and 3.7 ms
# slower than interpreting); VALIDATE, checked: 32.0 ms (bond_angles@10, nbody@6,
# relu_network@4 and tiered_cost@11 interpreted, 5-13 ms slower each; rational@14) -> 9.5
# (poisson_glm@17, einstein_solid@12 load; rational@14 a 1.5 ms tie). Hence 15.
COMPILE_MS, COMPILE_MS_PER_OP, FIRST_COMPILE_MS = 150.0, 0.25, 400.0
# Refitted once interpreted batches got 2-6x cheaper (runtime.blocks; Zen 4, 2026-12-07, load
# ~1): the suite's 48 workloads of 150-940 operations, each first batch forced both ways in
# two warm processes. Loading and the first compiled batch took 9-18 ms, flat in operations
# (arrhenius@31, 937: 10.4-13.6); interpreting 5-35 ms. Summed over what the wrong choices
# lost: FIT (19) 23.0 ms with the old 15 and 0.015, 6.7 with 7 and 0.002 (2.6-12.6 for 3-12);
# VALIDATE (29) 69.6 -> 7.0 (7.0-7.4 for 3-12): hence 7.
LOAD_MS, LOAD_MS_PER_OP, FIRST_LOAD_MS = 2.0, 0.002, 7.0
# The lane kernels of big programs (past the 1,200 steps COMPILE_MS_PER_OP was fitted with,
# up to backends.numba.batch.LANE_BUDGET) compile in ~0.55-0.9 ms of CPU per unit of their
# `lane_weight` since big ones call their vecmath steps (batch.CALLS_ABOVE; FIT, one core in
# a fresh process at load 3-6: gauss_loglik@840 6,236 units 4.2 s, weibull@463 8,174 7.4 s,
# logistic_regression@416 9,155 5.1 s, mlp_loss@112 9,433 6.2 s, option_portfolio@200 11,521
# 7.2 s): the switch costs at least that much.
LANE_MS_PER_UNIT = 0.8
# A program whose batches run on the tape's lanes (too big for lane kernels, heavy in exp/log)
# loads the tape's interpreter at its first compiled batch too, the first time in a process
# (its module's ~90 cache=True functions and its machine code: weibull@148, ~30 ms at load ~4).
FIRST_TAPE_LOAD_MS = 30.0
# Ops that NumPy runs far slower than an ordinary op (np.vectorize's Python per element: erf,
# erfc, the special functions; several whole-array steps: cbrt, xlogy; NumPy's select: where and
# the comparisons; its float64 sin and cos; np.power of a non-integer exponent) take the op
# table's `np_ns` per point, not INTERP_BATCH_NS_PER_OP: `python_element_ns` adds the
# difference to a row's and a batch's loss. Their np_ns are their NumPy forms timed on their
# domains, or in interpreted first batches (ir/ops.py).

_compiled_in_process = [False]
# One lock for every switch (a switch imports a module and compiles: rare, and never nested
# across functions); a forked child gets a new one, as a thread that held it is not there.
switch_lock = threading.RLock()


def _new_lock_in_child() -> None:
    global switch_lock
    switch_lock = threading.RLock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_new_lock_in_child)


def _numba_started() -> bool:
    """Whether this process has already paid Numba's runtime set-up (a kernel loaded)."""
    nrt = sys.modules.get("numba.core.runtime.nrt")
    return bool(nrt is not None and getattr(getattr(nrt, "rtsys", None), "_init", False))


def switch_ms(ops: int, cached: bool, lanes: int = 0) -> float:
    """The estimated cost of getting one compiled kernel of `ops` operations (and a lane
    kernel of `lanes` units of lane weight, 0 for none or a small one)."""
    if cached:
        return LOAD_MS + LOAD_MS_PER_OP * ops + (0.0 if _numba_started() else FIRST_LOAD_MS)
    first = 0.0 if _compiled_in_process[0] else FIRST_COMPILE_MS
    return COMPILE_MS + max(COMPILE_MS_PER_OP * ops, LANE_MS_PER_UNIT * lanes) + first


def row_loss_ns(ops: int, inputs: int = 0, python_ns: float = 0.0) -> float:
    """What one interpreted row call of `inputs` numbers loses against the compiled one
    (`python_ns`: its ops that run Python per element, `python_element_ns`)."""
    return (INTERP_ROW_CALL_NS - COMPILED_ROW_CALL_NS + INTERP_ROW_API_NS
            + INTERP_ROW_NS_PER_INPUT * inputs + INTERP_ROW_API_NS_PER_OP * ops
            + (INTERP_ROW_NS_PER_OP - COMPILED_ROW_NS_PER_OP) * ops + python_ns)


def batch_loss_ns(ops: int, rows: int, python_ns: float = 0.0) -> float:
    """What one interpreted batch call of `rows` points loses against the compiled one: a
    NumPy call per operation and block, and per point its operations (more each past
    BIG_PROGRAM_OPS) and `python_ns` (`python_element_ns`)."""
    blocks = -(-rows // block_rows(ops))
    scale = max(1.0, ops / BIG_PROGRAM_OPS) ** BIG_PROGRAM_POWER
    return (INTERP_BATCH_CALL_NS_PER_OP * ops * blocks
            + ((INTERP_BATCH_NS_PER_OP * scale - COMPILED_NS_PER_OP) * ops + python_ns) * rows)


def python_element_ns(census: dict[tuple[str, int, int | None], int]) -> float:
    """Per point, what a program's (`Program.census`) ops that NumPy runs slowly (the op
    table's `np_ns`) take beyond an ordinary op."""
    total = 0.0
    for (op, _, power), count in census.items():
        spec = OPS.get(op)
        if spec is not None and spec.np_ns and power is None:  # (a small power: products)
            total += count * max(0.0, spec.np_ns - INTERP_BATCH_NS_PER_OP)
    return total


class Pending:
    """The switch of one program's kernels: the interpreter's row and batch until the lost
    time reaches the switch's cost, then `compiled()` (the straight-line Build's kernels).
    `cached()` says whether Numba's cache holds them (a load, not a compile); `on_tape`,
    whether its compiled batches run on the tape's lanes."""

    def __init__(self, name: str, ops: int, interpreter: Callable[[], Any],
                 compiled: Callable[[], Any], cached: Callable[[], bool],
                 on_tape: bool = False, lanes: Callable[[], int] | None = None,
                 census: Callable[[], dict] | None = None) -> None:
        self.name, self.ops, self.on_tape = name, max(1, ops), on_tape
        self._lanes_of, self._lanes = lanes, None  # its lane kernel's weight, on first use
        self._census_of, self._python_ns = census, None  # (its ops run in Python: first use)
        self._interpreter = interpreter  # the Python module, imported on the first use
        self._compiled, self._cached = compiled, cached
        self.lost_ns = 0.0  # interpreted work so far, as time lost against compiled kernels
        self.batched = False  # whether a batch ran interpreted (FIRST_INTERP_MS_PER_OP paid)
        self.built: Any = None  # the straight-line Build, once switched

    @property
    def python_ns(self) -> float:
        """`python_element_ns` of the program (0 without its census), taken once."""
        if self._python_ns is None:
            self._python_ns = (0.0 if self._census_of is None
                               else python_element_ns(self._census_of()))
        return self._python_ns

    def _row(self, x: list, out: np.ndarray) -> None:
        """The interpreter's row kernel (its module imported on the first call, which puts
        the module's function in this method's place)."""
        self._row = getattr(self._interpreter(), self.name + "_row")
        self._row(x, out)

    def _batch(self, X: np.ndarray, OUT: np.ndarray) -> None:
        self._batch = getattr(self._interpreter(), self.name + "_batch")
        self._batch(X, OUT)

    def _budget_ns(self) -> float:
        cached = self._cached()
        if cached:  # (a load's cost has no lane term: the weight, which reads every step of
            return switch_ms(self.ops, cached) * 1e6  # the record, 5-15 ms, is not taken)
        if self._lanes is None:
            self._lanes = 0 if self._lanes_of is None else self._lanes_of()
        return switch_ms(self.ops, cached, self._lanes) * 1e6

    def switch(self) -> Any:
        """The straight-line Build (compiling or loading its module on the first call)."""
        with switch_lock:
            if self.built is None:
                cached = self._cached()
                self.built = self._compiled()
                if not cached:
                    _compiled_in_process[0] = True
        return self.built

    # -- rows --------------------------------------------------------------------------------
    def _interpret_row(self, x: np.ndarray, out: np.ndarray) -> bool:
        """Whether the point ran interpreted: not when its lost time reaches the switch's
        cost, nor when the Python kernel cannot run it (an op whose `math` form refuses
        what it was given: the compiled kernel, made now, gives NumPy's answer)."""
        self.lost_ns += row_loss_ns(self.ops, x.shape[0], self.python_ns)
        if self.lost_ns >= self._budget_ns():
            return False
        try:
            self._row(x.tolist(), out)  # (a list: x is read before out is written)
        except Exception:  # noqa: BLE001 - the compiled kernel answers, or raises, instead
            self.lost_ns = float("inf")
            return False
        return True

    def charge_floats(self, inputs: int) -> None:
        """Count what an interpreted ``value_and_grad_floats`` call of `inputs` numbers lost
        beyond its value_and_grad (`FLOATS_ROW_NS`), until the switch is made."""
        if self.built is None:
            self.lost_ns += FLOATS_ROW_NS + FLOATS_ROW_NS_PER_INPUT * inputs

    def row(self, x: np.ndarray, out: np.ndarray) -> None:
        """One point: interpreted (x may be out), or compiled."""
        if self.built is None and self._interpret_row(x, out):
            return
        self.switch().rows[self.name](x, out)

    def bind_row(self, holder: Any, stand_ins: tuple, resolve: Callable) -> Callable:
        """The `call` for an api row holder: interpreted, rebound to the compiled kernel's
        entry point (`resolve`) once switched."""
        def call(x: np.ndarray, out: np.ndarray) -> None:
            if self.built is None and self._interpret_row(x, out):
                return
            holder.call = resolve(self.switch().rows[self.name], stand_ins)
            holder.call(x, out)

        if self.built is not None:
            return resolve(self.built.rows[self.name], stand_ins)
        return call

    # -- batches -----------------------------------------------------------------------------
    def _batch_now(self, X: np.ndarray, OUT: np.ndarray) -> bool:
        """Whether this batch runs interpreted (counting it), else the switch is made."""
        if self.built is not None:
            return False
        loss = batch_loss_ns(self.ops, X.shape[0], self.python_ns)
        if not self.batched:
            loss += FIRST_INTERP_MS_PER_OP * self.ops * 1e6
        budget = self._budget_ns()
        if self.on_tape and "symgraph.backends.tape.standard" not in sys.modules:
            budget += FIRST_TAPE_LOAD_MS * 1e6  # (its batches need the tape's interpreter)
        if self.lost_ns + loss >= budget:
            return False  # (a batch that alone would lose the switch's cost switches at once)
        self.lost_ns += loss
        self.batched = True
        return True

    def _interpret(self, X: np.ndarray, OUT: np.ndarray) -> bool:
        """NumPy over blocks of rows; False (and switched from then on) when an op's NumPy
        form cannot run them."""
        try:
            run_blocks(self._batch, X, OUT, self.ops)
        except Exception:  # noqa: BLE001 - the compiled kernel answers, or raises, instead
            self.lost_ns = float("inf")
            return False
        return True

    def batch(self, X: np.ndarray, OUT: np.ndarray) -> None:
        """A batch on the calling thread."""
        if not (self._batch_now(X, OUT) and self._interpret(X, OUT)):
            self.switch().batches[self.name](X, OUT)

    def threaded(self, X: np.ndarray, OUT: np.ndarray) -> None:
        """A batch shared between threads once compiled (interpreted: NumPy on one)."""
        if not (self._batch_now(X, OUT) and self._interpret(X, OUT)):
            self.switch().threaded[self.name](X, OUT)
