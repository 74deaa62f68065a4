"""Numba kernels for a batch axis that is a loop (lower.reduce): one pass over the rows of the
data arrays, on all threads, accumulating each program's output slots per chunk of rows.

``NAME_reduce(_p, _d0, _d1, ..., _ACC, _c0, _c1)`` takes the parameter vector, one 2-D
C-contiguous float64 array per data group (rows by columns), ``_ACC`` of shape (chunks, slots)
and a range of chunks; chunk c is rows ``[c * ROWS_PER_CHUNK, (c + 1) * ROWS_PER_CHUNK)``, and
``_ACC[c]`` gets its sums. Threads take ranges of whole chunks (runtime.reduction: the kernels
release the GIL; Numba's ``parallel=True`` prange cost 4x the compile time, 1.2 s -> 5 s, for
the same loop).

Row programs of up to MAX_SUM_STEPS steps run as lane kernels (`lane_reduce_lines`): a chunk
is cut into blocks of `BLOCK` rows, and each segment of the steps (backends.numba.batch's
`segments`: runs of vector steps, or of libm calls) is one loop over the block, which LLVM
vectorises across rows; exp, log, tanh, erf... are vecmath's (sin and cos call libm here: a
sum has no fix-up loop for vecmath's limited range). Each output slot keeps one sum per row of
the block (``_A[k * BLOCK + j]``), added in a fixed tree at the chunk's end; the loops are
emitted as LLVM IR by the runtime (``lane_sums``, runtime.sums), the parameters loaded once a
chunk. MLP 4-8-1, 10^5 rows, value and 49 gradients: 32.7 ms a step with libm's tanh in a
row loop, 1.9 ms as lanes. Bigger programs run the same kernel one row at a time (MLP's
Hessian, 1,952 steps and 2,451 sums: 30 s of compile, mostly LLVM; the row loop compiled by
Numba's front end took over 10 minutes). The partition depends on the number of rows only,
and runtime.reduction combines the chunks' sums pairwise: the same bits whatever the number
of threads. ``NAME_rows(_p, _d0, ..., _OUT)`` writes each
row's slots instead (per-row outputs; threads take slices of rows).
No fastmath: IEEE semantics, as in the other kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...lower.reduce import RowLayout
from ...lower.schedule import NAME, Program, Step
from ..common import INDENT, operand_text, step_lines
from .batch import LIMITED, _slots, is_vector_step, segments, vecmath_calls
from .cache import runtime_digest

ROWS_PER_CHUNK = 4096  # ~20-100 us of work a chunk: threads share a batch evenly
JIT_NOGIL = '@njit(cache=True, error_model="numpy", nogil=True)'
RUNTIME = "symgraph.backends.numba.runtime"
VECMATH = "symgraph.backends.numba.vecmath"
# Lane kernels (`lane_reduce_lines`): rows a block runs side by side, each slot keeping one
# accumulator per row of the block; fewer for wide outputs, so that a chunk's accumulators
# stay within MAX_ACCUMULATORS floats (64 KB of stack, about L1).
BLOCK = 64
MIN_BLOCK = 8
MAX_ACCUMULATORS = 8192
# Bigger row programs run one row at a time (a block of 1, libm, no vector code): LLVM's time
# for a lane kernel grows faster than its gain (as for batch kernels, batch.LANE_BUDGET).
MAX_SUM_STEPS = 600


def _data_args(layout: RowLayout) -> str:
    return ", ".join(f"_d{g}" for g in range(layout.n_data))


def _loads(p: Program, layout: RowLayout, row: str, indent: str) -> list[str]:
    names = p.inputs[layout.n_params:]
    return [f"{indent}{name} = _d{g}[{row}, {c}]"
            for name, (g, c) in zip(names, layout.columns())]


def _params(p: Program, layout: RowLayout, indent: str) -> list[str]:
    return [f"{indent}{name} = _p[{i}]" for i, name in enumerate(p.inputs[:layout.n_params])]


def rows_kernel(p: Program, layout: RowLayout) -> list[str]:
    I2 = INDENT * 2
    lines = [JIT_NOGIL, f"def {p.name}_rows(_p, {_data_args(layout)}, _OUT):"]
    lines += _params(p, layout, INDENT)
    lines += [f"{INDENT}for _i in range(_d0.shape[0]):"]
    lines += _loads(p, layout, "_i", I2)
    lines += step_lines(p, "nb", I2)
    lines += [f"{I2}_OUT[_i, {k}] = {operand_text(o)}" for k, (_, o) in enumerate(p.outputs)]
    return lines


def _libm(step: Step) -> bool:
    """Whether a step's vecmath function is exact only in a range (sin, cos): reductions call
    libm for it (a lane kernel has no fix-up loop for a row's sum)."""
    return bool(set(vecmath_calls(_render(step, "lanes"))) & set(LIMITED))


def _render(step: Step, flavour: str) -> str:
    return step_lines(Program("", (), (step,), ()), flavour, "")[0]


def _vector(step: Step) -> bool:
    return is_vector_step(step) and not _libm(step)


def uses_lane_sums(p: Program) -> bool:
    return len(p.steps) <= MAX_SUM_STEPS


def block_for(width: int) -> int:
    block = BLOCK
    while block > MIN_BLOCK and width * block > MAX_ACCUMULATORS:
        block //= 2
    return block


def lane_reduce_lines(p: Program, layout: RowLayout) -> list[str]:
    """``NAME_lanes`` (plain Python: a block of rows, one loop per segment of the steps, as in
    backends.numba.batch), the runtime's ``lane_sums`` of it, and ``NAME_reduce`` calling it
    for each chunk. Row values of slot k are added into ``_A[k * block + _j]``: one sum per
    row of the block, which the runtime adds in a fixed tree at the chunk's end."""
    lanes = uses_lane_sums(p)  # else one row at a time: one loop, libm, no vector code
    width, block = len(p.outputs), block_for(len(p.outputs)) if lanes else 1
    runs = (segments(p, _vector) if lanes else [list(p.steps)]) or [[]]
    slot = _slots(p, runs, True, True)
    count = max(slot.values(), default=-1) + 1
    params = p.inputs[:layout.n_params]
    column = dict(zip(p.inputs[layout.n_params:], layout.columns()))
    born = {s.target: k for k, run in enumerate(runs) for s in run}
    sums: dict[int, list[tuple[int, str]]] = {}
    for k, (_, o) in enumerate(p.outputs):  # a slot is added where its value is computed
        sums.setdefault(born.get(o.value, 0) if o.kind == NAME else 0, []).append(
            (k, operand_text(o)))
    data = _data_args(layout)
    used = {o.value for s in p.steps for o in s.operands if o.kind == NAME} | {
        o.value for _, o in p.outputs if o.kind == NAME}
    I2 = INDENT * 2
    lines = [f"def {p.name}_lanes(_p, {data}, _T, _A, _s, _m):",
             f"{INDENT}# Rows _s .. _s + _m - 1; a value crossing loops lives in _T[slot * "
             f"{block} + _j], slot k's sum of rows in _A[k * {block} + _j]."]
    lines += [f"{INDENT}{name} = _p[{i}]" for i, name in enumerate(params) if name in used]
    for k, run in enumerate(runs):
        mine = {s.target for s in run}
        names = [o.value for s in run for o in s.operands if o.kind == NAME] + [
            o.value for kk, _ in sums.get(k, []) for o in [p.outputs[kk][1]] if o.kind == NAME]
        reads = [n for n in dict.fromkeys(names) if n not in mine and (n in slot or n in column)]
        body = [f"{I2}{n} = _T[{slot[n] * block} + _j]" if n in slot else
                f"{I2}{n} = _d{column[n][0]}[_s + _j, {column[n][1]}]" for n in reads]
        body += [I2 + _render(s, "lanes" if lanes and not _libm(s) else "nb") for s in run]
        body += [f"{I2}_T[{slot[s.target] * block} + _j] = {s.target}" for s in run
                 if s.target in slot]
        body += [f"{I2}_A[{kk * block} + _j] += {o}" for kk, o in sums.get(k, [])]
        if body:
            lines += [f"{INDENT}for _j in range(_m):", *body]
    checks = [f"_p.shape[0] < {layout.n_params}", f"_ACC.shape[1] != {width}",
              "_ACC.shape[0] < _c1"] + [f"_d{g}.shape[1] != {w}" for g, w in
                                        enumerate(layout.widths)] + [
        f"_d{g}.shape[0] != _d0.shape[0]" for g in range(1, layout.n_data)]
    columns = ", ".join(map(str, layout.widths)) + ("," if layout.n_data == 1 else "")
    return lines + [
        "", "", f"_{p.name}_sums = lane_sums({p.name}_lanes, slots={count * block}, "
        f"block={block}, chunk={ROWS_PER_CHUNK}, width={width}, columns=({columns}))", "", "",
        JIT_NOGIL, f"def {p.name}_reduce(_p, {data}, _ACC, _c0, _c1):",
        f"{INDENT}if {' or '.join(checks)}:",
        f'{I2}raise ValueError("{p.name}_reduce: arrays of the wrong shapes")',
        f"{INDENT}for _c in range(_c0, _c1):",
        f"{I2}_{p.name}_sums(_p, ({data},), _ACC, _c)  # {p.name}_lanes on each block of "
        f"{block} rows"]


def emit_numba_reduce(programs: Sequence[Program], layout: RowLayout, title: str,
                      version: str) -> str:
    kernels = [lane_reduce_lines(p, layout)
               + ["", "", *rows_kernel(p, layout)] for p in programs]
    code = "\n".join(line for k in kernels for line in k)
    vector = sorted(vecmath_calls(code))
    lines = ['"""' + title, "", f"Generated by symgraph {version}; regenerate rather than edit.",
             "NAME_reduce sums each chunk's rows of every output slot into _ACC[chunk]",
             "(NAME_lanes on blocks of rows, compiled by symgraph's Numba runtime, where it is",
             "there); NAME_rows writes every row's slots into _OUT.", '"""', "", "import math", "",
             "import numpy as np", "from numba import njit", ""]
    if "lane_sums(" in code:
        lines += [f"from {RUNTIME} import lane_sums",
                  *([f"from {VECMATH} import {', '.join(vector)}"] if vector else []), "",
                  f"# runtime {runtime_digest()}: Numba's cache of this file is of that runtime",
                  ""]
    lines += [f"ROWS_PER_CHUNK = {ROWS_PER_CHUNK}"]
    for k in kernels:
        lines += ["", "", *k]
    return "\n".join(lines) + "\n"
