"""Emit Numba kernels: a jitted per-point kernel and a parallel batch loop over it.

``error_model="numpy"`` makes division by zero give inf/nan instead of raising, and no
fastmath flag is set, so results keep IEEE semantics. ``cache=True`` keeps the machine code
beside the generated file, so another process reuses it without compiling.
"""

from __future__ import annotations

from collections.abc import Sequence

from .emit_common import INDENT, module_header, output_lines, step_lines
from .schedule import Program

JIT = '@njit(cache=True, error_model="numpy")'
JIT_PARALLEL = '@njit(cache=True, error_model="numpy", parallel=True)'


def _row_kernel(p: Program) -> list[str]:
    lines = [JIT, f"def {p.name}_row(_x, _out):"]
    lines += [f"{INDENT}{name} = _x[{i}]" for i, name in enumerate(p.inputs)]
    lines += step_lines(p, "nb", INDENT)
    lines += output_lines(p, "_out[{k}]", INDENT)
    return lines


def _batch_kernel(p: Program) -> list[str]:
    return [JIT_PARALLEL, f"def {p.name}_batch(_X, _OUT):",
            f"{INDENT}for _i in prange(_X.shape[0]):",
            f"{INDENT * 2}{p.name}_row(_X[_i], _OUT[_i])"]


def emit_numba(programs: Sequence[Program], title: str, description: Sequence[str],
               input_labels: Sequence[str], version: str) -> str:
    lines = module_header(title, description, programs, input_labels, version,
                          ["import math", "", "import numpy as np",
                           "from numba import njit, prange"])
    for p in programs:
        lines += ["", "", *_row_kernel(p), "", "", *_batch_kernel(p)]
    return "\n".join(lines) + "\n"
