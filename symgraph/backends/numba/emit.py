"""Emit Numba kernels: a per-point kernel and a batch kernel (symgraph.backends.numba.batch).

Each program's steps are written once, as a plain Python function ``NAME_steps(_x, _out)`` (one
statement per step; it runs as it is). The jitted ``NAME_row`` does not compile the steps
through Numba's per-statement front end (about a millisecond a statement, seconds for a kernel
of a few thousand steps): its body is one call of ``straight_line(NAME_steps)``, from
symgraph's Numba runtime (symgraph.backends.numba.runtime), which emits every step with the
implementation Numba itself uses for that operation on float64. The machine code is that of an
``@njit`` of ``NAME_steps``, bit for bit, and compiling it takes a tenth of the time. The
module holds only the user's math: it imports the runtime in one line (and in another the
vecmath functions its lane code calls), and its header names the runtime's digest, so that
Numba's cache of it goes with the runtime it was compiled by.

``emit_numba_standalone`` writes the same kernels for Numba's public API alone (``njit``), for a
file that must run where symgraph is not installed: the steps are the body of each ``@njit``
``NAME_row``, a batch is a loop over rows. The numbers are the same; compiling is slower
(docs/cli.md says how much), and a batch runs on one thread, without lanes.

``error_model="numpy"`` makes division by zero give inf/nan instead of raising, and no
fastmath flag is set, so results keep IEEE semantics. ``cache=True`` keeps the machine code
beside the generated file, so another process reuses it without compiling. A row kernel reads
every input before it writes any output, so ``_x`` and ``_out`` may be the same array (the API
passes floats in the array the results come back in).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.cuberoot import source as cuberoot_source
from ...lower.schedule import Program
from ..common import INDENT, module_header, needed_preludes, output_lines, step_lines
from .batch import JIT, JIT_BATCH, batch_kernel_lines, vecmath_calls
from .cache import runtime_digest
from .packs import packed_order, packs
from .point import has_point, point_lines

RUNTIME = "symgraph.backends.numba.runtime"
VECMATH = "symgraph.backends.numba.vecmath"
# What the kernels' names are, after the description of the math (module docstrings).
HOW = ["NAME_steps is each kernel in plain Python; NAME_row runs it compiled (symgraph's Numba",
       "runtime lowers each step with Numba's own code for it: the bits of an @njit of",
       "NAME_steps). NAME_batch runs NAME_chunks, which threads share (symgraph.runtime.batching).",
       "NAME_point is the same steps for one point given as numbers; NAME_api is what the API",
       "calls with them (symgraph.backends.numba.point)."]
STANDALONE_HOW = ["Needs only NumPy and Numba: each NAME_row is the steps, compiled by @njit;",
                  "NAME_batch runs it on each row."]


def _preludes(programs: Sequence[Program]) -> list[str]:
    """The lines the used ops' Numba templates need (special and user functions' imports)."""
    preludes = needed_preludes(programs, "nb_prelude")
    return ["", *preludes] if preludes else []


def _steps_function(p: Program, suffix: str = "steps") -> list[str]:
    lines = [f"def {p.name}_{suffix}(_x, _out):"]
    lines += [f"{INDENT}{name} = _x[{i}]" for i, name in enumerate(p.inputs)]
    lines += step_lines(p, "nb", INDENT)
    lines += output_lines(p, "_out[{k}]", INDENT)
    return lines


def _row_kernel(p: Program) -> list[str]:
    return [f"_{p.name}_steps = straight_line({p.name}_steps)", "", "",
            JIT, f"def {p.name}_row(_x, _out):", f"{INDENT}_{p.name}_steps(_x, _out)"]


def emit_numba(programs: Sequence[Program], title: str, description: Sequence[str],
               input_labels: Sequence[str], version: str) -> str:
    """The module the cache loads: kernels compiled by symgraph's Numba runtime."""
    batches = [batch_kernel_lines(p) for p in programs]
    code = "\n".join(line for b in batches for line in b)
    # a point kernel's packs (independent vecmath calls, SIMD lanes at a time): their steps
    # stand together in NAME_steps
    found = {p.name: packs(p) for p in programs if has_point(p)}
    points = {p.name: point_lines(p, found[p.name]) for p in programs if p.name in found}
    used = sorted(name for name in ("fetch_add", "lane_loops", "load_acquire")
                  if f"{name}(" in code) + (["point_line"] if points else []) + ["straight_line"]
    used = sorted(used + (["floats_line"] if "value_grad" in points else []))
    steps = [_steps_function(packed_order(p, found.get(p.name, []))) for p in programs]
    # vecmath functions the lane code and the steps call (inlined, not called; plain Numba,
    # the runtime's fallback, calls them)
    vector = sorted(vecmath_calls("\n".join([code, *(line for s in steps for line in s)])))
    lines = module_header(title, description, programs, input_labels, version,
                          ["import math", "", "import numpy as np", "from numba import njit", "",
                           f"from {RUNTIME} import {', '.join(used)}",
                           *([f"from {VECMATH} import {', '.join(vector)}"] if vector else []),
                           "", f"# runtime {runtime_digest()}: Numba's cache of this file is of "
                           "that runtime"],
                          needs="NumPy, Numba and symgraph's Numba runtime", how=HOW)
    lines += _preludes(programs)
    for p, batch, s in zip(programs, batches, steps):
        lines += ["", "", *s, "", "", *_row_kernel(p), "", "", *batch]
        if p.name in points:
            lines += ["", "", *points[p.name]]
    return "\n".join(lines) + "\n"


def emit_numba_standalone(programs: Sequence[Program], title: str, description: Sequence[str],
                          input_labels: Sequence[str], version: str) -> str:
    """A module for Numba's public API alone: @njit rows, batches as loops over rows."""
    lines = module_header(title, description, programs, input_labels, version,
                          ["import math", "", "import numpy as np", "from numba import njit"],
                          needs="only the standard library, NumPy and Numba's njit",
                          how=STANDALONE_HOW)
    if any(s.op == "cbrt" for p in programs for s in p.steps):  # symgraph's cube root, as is
        lines += ["", "", JIT, cuberoot_source("vcbrt")]
    lines += _preludes(programs)
    for p in programs:
        n, m = len(p.inputs), len(p.outputs)
        lines += ["", "", JIT, *_steps_function(p, "row"), "", "",
                  JIT_BATCH, f"def {p.name}_batch(_X, _OUT):",
                  f'{INDENT}"""_OUT[k] = {p.name}_row of _X[k], for each row k."""',
                  f"{INDENT}if _X.shape[1] != {n} or _OUT.shape[0] != _X.shape[0] or "
                  f"_OUT.shape[1] != {m}:",
                  f'{INDENT * 2}raise ValueError("{p.name}_batch needs _X of shape (N, {n}) and '
                  f'_OUT of shape (N, {m})")',
                  f"{INDENT}for _k in range(_X.shape[0]):",
                  f"{INDENT * 2}{p.name}_row(_X[_k], _OUT[_k])"]
    return "\n".join(lines) + "\n"
