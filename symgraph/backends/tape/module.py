"""Tapes as objects: `Tape` (one program's instruction arrays, and the interpreter of the op
table they were built for), `tape_text` (the tape as readable steps) and `TapeModule`, which
stands in for a generated module with ``<program>_row`` / ``<program>_batch`` functions around
the interpreter's kernels (`symgraph.backends.tape.interpreter`). Plain Python: the checks and
choices around each call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from ...lower.naming import comment_text
from ...lower.schedule import Step
from ..numba.cache import Entry
from .interpreter import MAX_BLOCK, Interpreter, interpreter_for
from .opcodes import SINCOS

LANE_BUDGET = 1 << 20  # float64 registers per thread in a batch (8 MB)
# A batch's register file (clustered order) past which its lanes run depth first (`lane_tape`).
# Fitted on FIT families only (value+grad, CPU time per point, clustered -> depth first, load
# 6-7): arrhenius@993 11.9 -> 8.8 us (a 5.9 MB file; 11,563 -> 6,045 registers); below it,
# weibull@463 3.62 -> 3.76 (2.6 MB), gauss_loglik@840 1.85 -> 1.67 (3.2 MB), mlp_loss@112 2.53 ->
# 2.36 (1.2 MB). Held out (VALIDATE): cubic_eos@74 8.40 -> 5.07 (4.3 MB, depth first);
# student_t@444 1.44 -> 1.53, einstein_solid@375 3.58 -> 4.00, poisson_glm@533 2.08 -> 1.95
# (all below: clustered kept).
DEPTH_FIRST_BYTES = 4 << 20
# Below it, depth first all the same where it makes the register file this share of the
# clustered one or less (`lanes_for`). Fitted on FIT families (value+grad lane batches per
# point, one process, load ~7; depth first's registers over clustered's): lennard_jones@55
# 0.35, 2.16 -> 1.85 us, weibull@463 0.65, 4.13 -> 3.65; kept clustered: gauss_loglik@840 0.73,
# 1.00 us (depth first 1.13), mlp_loss@112 0.90, 2.05 (1.95, within the noise).
DEPTH_FIRST_SHARE = 0.7
# Rows of lanes (8 bytes each) a batch's lanes may touch before they take fewer lanes, down
# to 64 (4 MB: past it, 64 lanes ran faster). Fitted on FIT families (value+grad lane batches
# per point, one process, load ~7; rows touched, 64 lanes against 128): product_chain@1666
# 6,664, 13.8 us against 17.2, arrhenius@1734 5,849, 14.8 against 16.0; kept at 128:
# arrhenius@993 3,364, 5.44 us (64: 7.25), gauss_loglik@1580 2,588, 1.37 (2.20),
# quadratic_form@98 284, 3.46 (3.83).
LANE_CACHE = 1 << 19
FEW_LIVE = True  # the depth-first order runs instructions that free values early (`pressure`)
BOTH_WAYS = True  # depth first from the outputs both ways, the fewer registers kept
IMMEDIATES = True  # a batch's lanes read constant operands as numbers (`immediate`)


@dataclass(frozen=True, eq=False)
class Tape:
    """One program as arrays. Instruction i: ``regs[targets[i]] = op(regs[operands[i]])``."""

    name: str
    input_names: tuple[str, ...]
    output_labels: tuple[str, ...]
    n_registers: int
    opcodes: np.ndarray  # int32 (S,), codes of `interpreter.names`
    operands: np.ndarray  # int32 (S, 3), unused slots repeat the first operand
    targets: np.ndarray  # int32 (S,)
    blocks: np.ndarray  # int32 (B + 1,): block k is instructions blocks[k] .. blocks[k + 1] - 1
    constants: np.ndarray  # float64 (C,), in registers n_inputs ... n_inputs + C - 1
    outputs: np.ndarray  # int32 (K,), the register of each output
    step_of: np.ndarray  # int32 (S,), the program step an instruction belongs to
    steps: tuple[Step, ...] = ()  # the program's steps, for printing; () when shipped
    # The interpreter of the op table the codes are of; None: the table's as it is now.
    interpreter: Interpreter | None = None

    def __post_init__(self) -> None:
        if self.interpreter is None:
            object.__setattr__(self, "interpreter", interpreter_for())
        problem = _problem(self)
        if problem:  # the interpreter indexes without checks: a bad index would be a crash
            raise ValueError(f"tape {self.name!r} cannot run: {problem}")

    @property
    def n_inputs(self) -> int:
        return len(self.input_names)

    @property
    def arrays(self) -> tuple:
        """The interpreter's arguments before the point: what a worker needs to run the tape."""
        return (self.opcodes, self.operands, self.targets, self.blocks, self.constants,
                self.outputs, self.n_registers)

    def __repr__(self) -> str:
        return (f"<Tape {self.name}: {len(self.opcodes)} instructions, {self.n_registers} "
                f"registers, {len(self.constants)} constants, {len(self.outputs)} outputs>")

    def stripped(self) -> Tape:
        """The tape without its program steps (small to pickle; prints without comments)."""
        return replace(self, steps=())


_INT_ARRAYS = ("opcodes", "operands", "targets", "blocks", "outputs", "step_of")


def _problem(tape: Tape) -> str | None:
    """Why the interpreter cannot run `tape` safely (None: it can): each array of its dtype and
    shape, every code an instruction of the interpreter, every register index in the register
    file, blocks that cover the instructions in runs of one op no longer than MAX_BLOCK. A tape
    read from a file (or unpickled) may be anything; these hold for every tape the builder
    makes."""
    for name in _INT_ARRAYS:
        array = getattr(tape, name)
        if not isinstance(array, np.ndarray) or array.dtype != np.int32:
            return f"{name} is not an int32 array"
    if not isinstance(tape.constants, np.ndarray) or tape.constants.dtype != np.float64:
        return "constants is not a float64 array"
    n, registers = len(tape.opcodes), tape.n_registers
    shapes = {"opcodes": (n,), "operands": (n, 3), "targets": (n,), "step_of": (n,)}
    for name, shape in shapes.items():
        if getattr(tape, name).shape != shape:
            return f"{name} has shape {getattr(tape, name).shape}, not {shape}"
    if (tape.blocks.ndim, tape.constants.ndim, tape.outputs.ndim) != (1, 1, 1):
        return "blocks, constants and outputs must be one-dimensional"
    if not isinstance(registers, int) or registers < tape.n_inputs + len(tape.constants):
        return f"{registers!r} registers cannot hold its inputs and constants"
    if len(tape.outputs) != len(tape.output_labels):
        return f"{len(tape.outputs)} outputs for {len(tape.output_labels)} labels"
    for name in ("operands", "targets", "outputs"):
        array = getattr(tape, name)
        if array.size and (array.min() < 0 or array.max() >= registers):
            return f"{name} index a register outside 0 .. {registers - 1}"
    if n and (tape.opcodes.min() < 0 or tape.opcodes.max() >= len(tape.interpreter.names)):
        return "an opcode is not an instruction of its interpreter"
    blocks = tape.blocks.astype(np.int64)
    if len(blocks) < 1 or blocks[0] != 0 or blocks[-1] != n:
        return f"blocks do not run from 0 to {n}"
    sizes = np.diff(blocks)
    if sizes.size and sizes.min() < 1:
        return "a block is empty"
    ops = tape.opcodes[blocks[:-1]]
    if n and np.any(tape.opcodes != np.repeat(ops, sizes)):
        return "a block mixes ops"
    gathered = tape.interpreter.vector[ops] | (ops == SINCOS)  # through a MAX_BLOCK buffer
    if np.any(sizes[gathered] > tape.interpreter.max_block):
        return f"a vector block is longer than {tape.interpreter.max_block} instructions"
    slot = tape.interpreter.immediate[tape.opcodes]
    which = np.flatnonzero(slot >= 0)  # the lanes index the constants with these
    if which.size:
        k = tape.operands[which, slot[which]]
        if k.min() < tape.n_inputs or k.max() >= tape.n_inputs + len(tape.constants):
            return "an immediate instruction's constant operand is no constant's register"
    return None


def tape_text(tape: Tape) -> str:
    """The tape as readable steps, one line per instruction: ``r12 = sin(r3)    # t4``."""
    lines = [f"# tape {tape.name}: {tape.n_inputs} inputs, {len(tape.constants)} constants, "
             f"{tape.n_registers} registers, {len(tape.opcodes)} instructions, "
             f"{len(tape.outputs)} outputs"]
    lines += [f"r{i} = x[{i}]    # {comment_text(name, 60)}"
              for i, name in enumerate(tape.input_names)]
    lines += [f"r{tape.n_inputs + j} = {value!r}"
              for j, value in enumerate(tape.constants.tolist())]
    interpreter = tape.interpreter
    forms = [f"r{{}} = {name}(" + ", ".join(["r{}"] * arity) + ")"
             for name, arity in zip(interpreter.names, interpreter.arities)]
    notes: dict[int, str] = {}  # a chain's instructions share their step's note
    for op, (a, b, c), target, step in zip(tape.opcodes.tolist(), tape.operands.tolist(),
                                           tape.targets.tolist(), tape.step_of.tolist()):
        line = (f"r{target}, r{c} = sincos(r{a})" if op == SINCOS  # two targets
                else forms[op].format(target, a, b, c))
        if tape.steps and step >= 0:
            note = notes.get(step)
            if note is None:
                s = tape.steps[step]
                note = notes[step] = "    # " + comment_text(
                    f"{s.target}: {s.comment}" if s.comment else s.target, 80)
            line += note
        lines.append(line)
    lines += [f"out[{k}] = r{r}    # {comment_text(label, 60)}"
              for k, (label, r) in enumerate(zip(tape.output_labels, tape.outputs.tolist()))]
    return "\n".join(lines) + "\n"


def _row_kernel(tape: Tape):
    arrays, n, k = tape.arrays, tape.n_inputs, len(tape.outputs)
    size = tape.n_registers + 2 * MAX_BLOCK  # the tail: the vector blocks' buffers
    # Loaded from the cache when first used.
    run = Entry(tape.interpreter.run_row, (*arrays, *_STAND_INS[:3]))

    def row(x, out) -> None:
        # One compiled signature for every call: C-contiguous float64 arrays (a tuple of floats
        # would make Numba compile again for each length).
        x = _plain_float64(x)
        if x.shape != (n,) or np.shape(out) != (k,):
            raise ValueError(f"{tape.name}_row expects x of shape ({n},) and out of shape "
                             f"({k},), got {x.shape} and {np.shape(out)}")
        if _writable_c_float64(out):
            run(*arrays, x, out, np.empty(size))
        else:
            result = np.empty(k)
            run(*arrays, x, result, np.empty(size))
            out[...] = result

    row.__name__ = row.__qualname__ = f"{tape.name}_row"
    return row


def lane_tape(tape: Tape, depth_first: bool = True) -> Tape:
    """`tape` as its lanes run best: registers assigned again with every target apart from its
    own operands' rows (`passes.linear_scan`'s `apart`: the lanes' loops vectorise only then);
    if `depth_first`, in depth-first order from the outputs (`passes.depth_first_order`, then
    `pressure.few_live_order`), so each value is used soon after its write and the register
    file, a row of lanes per register, stays small. The row interpreter keeps the clustered
    order (runs of one op, decoded once per run); the lanes decode each instruction anyway.
    Derived from the tape's own arrays, so cached, pickled and shipped tapes get it too; the
    tape itself when it cannot be read back as values (never for the builder's tapes).

    Value+grad per point, 128 lanes, clustered -> depth-first (fused tapes, one process, load
    5.7): arrhenius@993 19.9 -> 16.3 us (11,563 -> 6,056 registers), cubic_eos@74 13.7 -> 11.8
    (8,319 -> 2,946), student_t@444 2.40 -> 2.32 (1,954 -> 1,307)."""
    from . import passes, pressure

    # From Numba's cache, through the entry points (a dispatcher's call would type the arrays
    # again, or refresh Numba's registries: 0.15-0.3 s).
    tape_values, depth_first_order, linear_scan, split_blocks, few_live_order = (
        _entered(passes.tape_values), _entered(passes.depth_first_order),
        _entered(passes.linear_scan), _entered(passes.split_blocks),
        _entered(pressure.few_live_order))
    n_fixed = tape.n_inputs + len(tape.constants)
    code, outputs, n_values, ok = tape_values(tape.opcodes, tape.operands, tape.targets,
                                              tape.outputs, n_fixed, tape.n_registers)
    if not ok:
        return tape
    if not depth_first:
        rows, out, n_registers = linear_scan(code, outputs, n_values, n_fixed, 1)
    else:  # from the outputs in their order and in reverse: the fewer registers (ties: the first)
        best = None
        for roots in (outputs, outputs[::-1].copy()) if BOTH_WAYS else (outputs,):
            order = depth_first_order(code, n_values, roots)
            if FEW_LIVE:
                order = few_live_order(code, n_values, outputs, order)
            scanned = linear_scan(code[order], outputs, n_values, n_fixed, 1)
            if best is None or scanned[2] < best[1][2]:
                best = (order, scanned)
        code = code[best[0]]
        rows, out, n_registers = best[1]
    opcodes, targets = rows[:, 0].copy(), rows[:, 1].copy()
    operands = np.ascontiguousarray(rows[:, 2:])
    blocks = split_blocks(opcodes, operands, targets, n_registers, tape.interpreter.vector,
                          tape.interpreter.max_block)
    return replace(tape, n_registers=int(n_registers), opcodes=opcodes, operands=operands,
                   targets=targets, blocks=blocks, outputs=out,
                   step_of=tape.step_of[code[:, 5]].astype(np.int32))


def lanes_for(tape: Tape) -> tuple[Tape, int]:
    """The tape a batch of `tape` runs on its lanes, and how many lanes (1: point by point, on
    `tape` itself). Depth first (`lane_tape`) for a register file past DEPTH_FIRST_BYTES or
    one that depth first makes DEPTH_FIRST_SHARE of the size or less: else the clustered
    order, whose runs of one op the lanes' dispatch predicts; with immediates; fewer lanes
    while the rows the lanes touch (immediate constants' rows are not) pass LANE_CACHE."""
    width = lane_width(tape.n_registers)
    lanes = lane_tape(tape, True)
    if (8 * tape.n_registers * max(width, 8) <= DEPTH_FIRST_BYTES
            and lanes.n_registers > DEPTH_FIRST_SHARE * tape.n_registers):
        lanes = lane_tape(tape, False)
    width = lane_width(lanes.n_registers)
    if width == 1:
        return tape, 1
    if IMMEDIATES:
        lanes = with_immediates(lanes)
    touched = _rows_touched(lanes)
    while width > 64 and touched * width > LANE_CACHE:
        width //= 2
    return lanes, width


def with_immediates(tape: Tape) -> Tape:
    """`tape` with its instructions on a constant made immediate ones where a form fits
    (`immediate.immediates`), blocks cut again; the tape itself when none fits."""
    from . import passes
    from .immediate import immediates

    split_blocks = _entered(passes.split_blocks)
    made = immediates(tape.interpreter, tape.opcodes, tape.operands, tape.n_inputs,
                      len(tape.constants))
    if made is None:
        return tape
    opcodes, operands = made
    blocks = split_blocks(opcodes, operands, tape.targets, tape.n_registers,
                          tape.interpreter.vector, tape.interpreter.max_block)
    return replace(tape, opcodes=opcodes, operands=operands, blocks=blocks)


def _entered(dispatcher: Any) -> Callable[..., Any]:
    """`dispatcher` called through its entry point for the types of each call's arguments."""
    from ..numba.cache import resolve

    def call(*args: Any) -> Any:
        return resolve(dispatcher, args)(*args)

    return call


def _rows_touched(tape: Tape) -> int:
    """Registers the lanes read or write as rows (an immediate's constant is read as one
    number)."""
    interpreter = tape.interpreter
    arity = np.array(interpreter.arities)[tape.opcodes]
    slot = interpreter.immediate[tape.opcodes]
    read = [tape.operands[(arity > s) & (slot != s), s] for s in range(3)]
    seen = np.zeros(tape.n_registers, np.bool_)  # (np.unique would import numpy.ma: ~10 ms)
    for rows in (tape.targets, *read, tape.outputs):
        seen[rows] = True
    return int(np.count_nonzero(seen))


def _batch_kernel(tape: Tape):
    n, k = tape.n_inputs, len(tape.outputs)
    interpreter = tape.interpreter
    made: list = []  # (arrays, registers, width, run), made on the first call

    def kernel() -> tuple:
        if not made:  # (two threads may both make it: the same arrays, either is kept)
            lanes, width = lanes_for(tape)
            # Loaded from the cache when first used (~10 ms each): a batch-only module never
            # loads the row's.
            arrays = lanes.arrays
            run = (Entry(interpreter.run_batch, (*arrays, *_STAND_INS[3:6])) if width > 1 else
                   Entry(interpreter.run_points, (*arrays, *_STAND_INS[3:5], _STAND_INS[0])))
            made.append((arrays, lanes.n_registers, width, run))
        return made[0]

    def batch(X, OUT) -> None:
        X = _plain_float64(X)
        if X.ndim != 2 or X.shape[1] != n or np.shape(OUT) != (X.shape[0], k):
            raise ValueError(f"{tape.name}_batch expects X of shape (N, {n}) and OUT of shape "
                             f"(N, {k}), got {X.shape} and {np.shape(OUT)}")
        arrays, n_registers, width, run = kernel()
        target = OUT if _writable_c_float64(OUT) else np.empty((X.shape[0], k))
        if width > 1:  # a register file per call: each thread's part of a batch has its own
            lanes = max(1, min(width, X.shape[0]))
            run(*arrays, X, target, np.empty((n_registers + 1, lanes)))
        else:
            run(*arrays, X, target, np.empty(n_registers + 2 * MAX_BLOCK))
        if target is not OUT:
            OUT[...] = target

    batch.__name__ = batch.__qualname__ = f"{tape.name}_batch"
    return batch


# The interpreter's array arguments after the tape's: float64, C order (x, out, registers of
# a row; X, OUT, registers of a batch). Entry points take exactly these; the input may be
# read-only (the interpreter only reads it).
_STAND_INS = (np.empty(0),) * 3 + (np.empty((0, 0)),) * 3


def _plain_float64(x) -> np.ndarray:
    """`x` as a float64, C-order, aligned array (copied only when it is not one already)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    return x if x.flags.aligned else x.copy()


def lane_width(n_registers: int) -> int:
    """Points a batch runs together: 128, fewer (down to 8) while a thread's registers would
    pass 8 MB (more lanes share each instruction's decoding; past that, cache misses take the
    gain); 1 (the point interpreter, point by point) when even 8 would not fit. On the suite's
    MLP, nest and 5,000-node DAG, 128 beat 64 by 3-4% and 32 by 10-15%; 256 was slower on two
    of them. At 473,000 registers 2 lanes took 13.5 ms a point against the point
    interpreter's 7.9 ms."""
    width = 128
    while width > 8 and n_registers * width > LANE_BUDGET:
        width //= 2
    return width if n_registers * width <= LANE_BUDGET else 1


def _writable_c_float64(array) -> bool:
    return (isinstance(array, np.ndarray) and array.dtype == np.float64
            and array.flags.c_contiguous and array.flags.writeable)


class DeferredTape(NamedTuple):
    """A tape built on its first use (`make` returns it): a module's value tape waits until a
    value is asked for, so setup to the first gradient builds the gradient's tape alone."""

    name: str
    make: Callable[[], Tape]


class TapeModule:
    """What api.py needs from a generated module: ``<name>_row`` and ``<name>_batch`` for each
    program, ``source`` (the tapes as readable steps, printed on first access) and ``path``.
    A `DeferredTape` is built when one of its functions is first called (or `tapes` read)."""

    def __init__(self, tapes: Sequence[Tape | DeferredTape], path: str | None = None) -> None:
        self._tapes: dict[str, Tape | DeferredTape] = {tape.name: tape for tape in tapes}
        self.path = path
        self._source: str | None = None
        self._lock = threading.Lock()
        for tape in tapes:
            if isinstance(tape, DeferredTape):
                for kind in ("row", "batch"):
                    setattr(self, f"{tape.name}_{kind}", self._deferred(tape.name, kind))
            else:
                self._bind(tape)

    def _bind(self, tape: Tape) -> None:
        setattr(self, f"{tape.name}_row", _row_kernel(tape))
        setattr(self, f"{tape.name}_batch", _batch_kernel(tape))

    def _built(self, name: str) -> Tape:
        tape = self._tapes[name]
        if isinstance(tape, DeferredTape):
            with self._lock:  # one build, whichever thread calls first
                tape = self._tapes[name]
                if isinstance(tape, DeferredTape):
                    tape = tape.make()
                    self._bind(tape)
                    self._tapes[name] = tape
        return tape

    def _deferred(self, name: str, kind: str):
        attribute = f"{name}_{kind}"

        def kernel(*args) -> None:  # callers may hold this function: it forwards, once built
            self._built(name)
            getattr(self, attribute)(*args)

        kernel.__name__ = kernel.__qualname__ = attribute
        return kernel

    @property
    def tapes(self) -> dict[str, Tape]:
        """The tapes by program name (deferred ones built now)."""
        for name in list(self._tapes):
            self._built(name)
        return dict(self._tapes)

    @property
    def source(self) -> str:
        if self._source is None:
            self._source = "\n".join(tape_text(t) for t in self.tapes.values())
        return self._source

    def __reduce__(self):
        # Pickles as its arrays (not the steps), so Dask workers rebuild it without the program.
        return (TapeModule, ([t.stripped() for t in self.tapes.values()], self.path))

    def __repr__(self) -> str:
        sizes = ", ".join(f"{n}: not built" if isinstance(t, DeferredTape) else
                          f"{n}: {len(t.opcodes)} instructions" for n, t in self._tapes.items())
        return f"<TapeModule {sizes}>"
