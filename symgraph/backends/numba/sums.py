"""Emit the fused kernels of a large sum of small terms (runtime.separable).

A sum of 10^5 terms of a few kinds (a chain's inner terms, its two ends; a grid's horizontal
and vertical differences) is evaluated kind by kind: per term, read its variables from the
point, run the kind's steps, and add the results where they belong. One loop per kind does
all three, with the kind's steps written out in its body, so each term's locals stay in
registers: no rows of gathered variables, no table of per-term results, no second pass to
scatter them (three passes over memory against NumPy's few vector passes).

The module has four kernels, each one loop per kind over the kind's table of variables
``_iK[t, j]`` (the point's index of term t's j-th variable):

- ``value(_x, _i0, ...)``: the sum;
- ``value_grad(_x, _g, _i0, ...)``: the sum, its gradient added into ``_g``;
- ``hessian(_x, _h, _i0, _s0, ...)``: each term's lower-triangle Hessian entries added into
  ``_h`` at the pattern's slots ``_sK[t, e]``;
- ``hessp(_x, _v, _r, _i0, ...)``: each term's local Hessian times the local part of ``_v``,
  added into ``_r``.

Each kind's steps are its template's programs (value and gradient; value and the local
Hessian's nonzeros), the names of a kind suffixed by its number (``t3_k1``) so that kinds do
not share locals. The callers zero the arrays the kernels add into.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...lower.naming import docstring_text
from ...lower.schedule import Program
from ..common import INDENT, needed_preludes, step_lines
from .batch import vecmath_calls
from .cache import runtime_digest
from .sum_kinds import JIT_SUM, SumKind, live, renamed, tables, value_only
from .sum_lanes import batch_kernel_lines, lane_code

__all__ = ["JIT_SUM", "SumKind", "emit_sum_kernels"]

_I1, _I2 = INDENT, INDENT * 2

HOW = ["Each kernel is one loop per kind of term: read the term's variables (_x[_iK[t, j]]),",
       "run the kind's steps, add the results where they go (the gradient's entries, the",
       "Hessian pattern's slots _sK[t, e], or H v's entries). The callers zero what is added",
       "into. symgraph.runtime.separable calls them."]


def _loop(number: int, p: Program, k: int) -> tuple[list[str], list[str]]:
    """The head of kind `number`'s loop (reading its term's row and variables, its steps) and
    the outputs' operands."""
    loads, steps, outputs = renamed(p, number, k, _I2)
    head = [f"{_I1}for _t in range(_i{number}.shape[0]):", f"{_I2}_row = _i{number}[_t]",
            *loads, *steps]
    return head, outputs


def _value(kinds: Sequence[SumKind]) -> list[str]:
    lines = [JIT_SUM, f"def value(_x{tables(kinds)}):", f'{_I1}"""The sum at _x."""',
             f"{_I1}_f = 0.0"]
    for n, kind in enumerate(kinds):
        head, outputs = _loop(n, value_only(kind.gradient), kind.k)
        lines += [*head, f"{_I2}_f += {outputs[0]}"]
    return lines + [f"{_I1}return _f"]


def _value_grad(kinds: Sequence[SumKind]) -> list[str]:
    lines = [JIT_SUM, f"def value_grad(_x, _g{tables(kinds)}):",
             f'{_I1}"""The sum at _x; its gradient added into _g."""', f"{_I1}_f = 0.0"]
    for n, kind in enumerate(kinds):
        head, outputs = _loop(n, kind.gradient, kind.k)
        lines += [*head, f"{_I2}_f += {outputs[0]}"]
        lines += [f"{_I2}_g[_row[{j}]] += {o}" for j, o in enumerate(outputs[1:])]
    return lines + [f"{_I1}return _f"]


def _hessian(kinds: Sequence[SumKind]) -> list[str]:
    lines = [JIT_SUM, f"def hessian(_x, _h{tables(kinds, True)}):",
             f'{_I1}"""Each term\'s lower-triangle Hessian entries added into _h at the '
             'pattern\'s slots."""']
    for n, kind in enumerate(kinds):
        head, outputs = _loop(n, live(kind.hessian, True), kind.k)
        lines += [*head, f"{_I2}_slot = _s{n}[_t]"]
        lines += [f"{_I2}_h[_slot[{e}]] += {o}" for e, o in enumerate(outputs[1:])]
    return lines


def _hessp(kinds: Sequence[SumKind]) -> list[str]:
    lines = [JIT_SUM, f"def hessp(_x, _v, _r{tables(kinds)}):",
             f'{_I1}"""Each term\'s local Hessian times the local part of _v, added into '
             '_r."""']
    for n, kind in enumerate(kinds):
        head, outputs = _loop(n, live(kind.hessian, True), kind.k)
        lines += head
        lines += [f"{_I2}_v{j} = _v[_row[{j}]]" for j in range(kind.k)]
        sums: list[list[str]] = [[] for _ in range(kind.k)]
        for (i, j), h in zip(kind.pairs, outputs[1:]):
            sums[i].append(f"{h} * _v{j}")
            if i != j:
                sums[j].append(f"{h} * _v{i}")
        lines += [f"{_I2}_r[_row[{i}]] += {' + '.join(terms)}"
                  for i, terms in enumerate(sums) if terms]
    return lines


def emit_sum_kernels(kinds: Sequence[SumKind], title: str, description: Sequence[str],
                     version: str) -> str:
    """The module of `value`, `value_grad`, `hessian` and `hessp` over `kinds`; `description`
    says what each kind's term is (the math the steps compute)."""
    programs = [p for kind in kinds for p in (kind.gradient, kind.hessian)]
    bodies = [_value(kinds), _value_grad(kinds), _hessian(kinds), _hessp(kinds)]
    lanes = batch_kernel_lines(kinds)
    steps = "\n".join(line for kind in kinds for p in (kind.gradient, kind.hessian)
                      for line in step_lines(p, "nb", ""))
    steps += "\n" + lane_code(kinds)
    bodies.append(lanes)
    vector = sorted(vecmath_calls(steps))
    lines = ['"""' + docstring_text(title), "", f"Generated by symgraph {version}; regenerate "
             "rather than edit. Imports NumPy, Numba and symgraph's Numba runtime (and its "
             "vector math).", ""]
    lines += [INDENT + docstring_text(d) for d in description]
    lines += ["", *HOW, '"""', "", "import math", "", "import numpy as np",
              "from numba import njit", "", "from symgraph.backends.numba.runtime import tile"]
    if vector:
        lines.append(f"from symgraph.backends.numba.vecmath import {', '.join(vector)}")
    lines += ["", f"# runtime {runtime_digest()}: Numba's cache of this file is of that runtime"]
    preludes = needed_preludes(programs, "nb_prelude")
    if preludes:
        lines += ["", *preludes]
    for body in bodies:
        lines += ["", "", *body]
    return "\n".join(lines) + "\n"
