"""Emit plain Python: a `math` kernel per point and a NumPy kernel per batch.

The per-point kernel uses `math` (fast on floats). `math` raises where NumPy returns
inf/nan (``1/0``, ``log(-1)``, ``exp(1000)``), so on any such error the point is recomputed by
the NumPy kernel: the numbers always follow NumPy, and the kernel never raises.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..lower.schedule import Program
from .common import INDENT, module_header, needed_preludes, output_lines, step_lines


def _row_kernel(p: Program) -> list[str]:
    body = INDENT * 2
    lines = [f"def {p.name}_row(_x, _out):", f"{INDENT}try:"]
    lines += [f"{body}{name} = float(_x[{i}])" for i, name in enumerate(p.inputs)]
    lines += step_lines(p, "py", body)
    lines += output_lines(p, "_out[{k}]", body)
    lines += [f"{INDENT}except (ArithmeticError, ValueError):",
              f"{body}# math raised (division by zero, domain, overflow): use NumPy's rules.",
              f"{body}{p.name}_batch(np.reshape(_x, (1, -1)), np.reshape(_out, (1, -1)))"]
    return lines


def _batch_kernel(p: Program) -> list[str]:
    body = INDENT * 2
    lines = [f"def {p.name}_batch(_X, _OUT):", f'{INDENT}with np.errstate(all="ignore"):']
    lines += [f"{body}{name} = _X[:, {i}]" for i, name in enumerate(p.inputs)]
    lines += step_lines(p, "np", body)
    lines += output_lines(p, "_OUT[:, {k}]", body)
    return lines


def emit_python(programs: Sequence[Program], title: str, description: Sequence[str],
                input_labels: Sequence[str], version: str) -> str:
    lines = module_header(title, description, programs, input_labels, version,
                          ["import math", "", "import numpy as np"],
                          needs="only the standard library and NumPy")
    preludes = needed_preludes(programs)
    if preludes:
        lines += ["", *preludes]
    for p in programs:
        lines += ["", "", *_row_kernel(p), "", "", *_batch_kernel(p)]
    return "\n".join(lines) + "\n"
