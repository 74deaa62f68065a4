"""Emit plain Python: a `math` kernel per point and a NumPy kernel per batch.

The per-point kernel uses `math` (fast on floats). `math` raises where NumPy returns
inf/nan (``1/0``, ``log(-1)``, ``exp(1000)``), so on any such error the point is recomputed by
the NumPy kernel: the numbers always follow NumPy, and the kernel never raises.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.ops import OPS
from ..lower.schedule import Program
from .common import INDENT, module_header, needed_preludes, operand_text, output_lines, step_lines


def _row_kernel(p: Program) -> list[str]:
    body = INDENT * 2
    lines = [f"def {p.name}_row(_x, _out):", f"{INDENT}try:"]
    lines += [f"{body}{name} = float(_x[{i}])" for i, name in enumerate(p.inputs)]
    lines += step_lines(p, "py", body)
    lines += output_lines(p, "_out[{k}]", body)
    lines += [f"{INDENT}except (ArithmeticError, ValueError):",
              f"{body}# math raised (division by zero, domain, overflow): use NumPy's rules.",
              f"{body}{p.name}_point(_x, _out)"]
    return lines


def _point_kernel(p: Program) -> list[str]:
    """The row again, each step that can raise retried alone by NumPy's template: only the
    steps that raised get NumPy's special values, the rest keep libm's bits (NumPy's SIMD
    functions on AVX-512 differ from libm in the last bit, so the whole point by NumPy would
    differ from the Numba backend's)."""
    body = INDENT * 2
    lines = [f"def {p.name}_point(_x, _out):", f'{INDENT}with np.errstate(all="ignore"):']
    lines += [f"{body}{name} = float(_x[{i}])" for i, name in enumerate(p.inputs)]
    for step in p.steps:
        spec = OPS[step.op]
        operands = [operand_text(o) for o in step.operands]
        code = spec.render("py", operands)
        if "math." in code or "/" in code or "**" in code:
            numpy = spec.render("np", [f"np.float64({o})" for o in operands])
            lines += [f"{body}try:", f"{body}{INDENT}{step.target} = {code}",
                      f"{body}except (ArithmeticError, ValueError):",
                      f"{body}{INDENT}{step.target} = float({numpy})"]
        else:
            lines.append(f"{body}{step.target} = {code}")
    lines += output_lines(p, "_out[{k}]", body)
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
        lines += ["", "", *_row_kernel(p), "", "", *_point_kernel(p), "", "", *_batch_kernel(p)]
    return "\n".join(lines) + "\n"
