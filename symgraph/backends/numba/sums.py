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

import re
from collections.abc import Sequence
from dataclasses import replace

from ...lower.naming import docstring_text
from ...lower.schedule import NAME, Program
from ..common import INDENT, needed_preludes, operand_text, step_lines
from .batch import vecmath_calls

JIT_SUM = '@njit(cache=True, error_model="numpy", nogil=True)'
_I1, _I2 = INDENT, INDENT * 2
_WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")

HOW = ["Each kernel is one loop per kind of term: read the term's variables (_x[_iK[t, j]]),",
       "run the kind's steps, add the results where they go (the gradient's entries, the",
       "Hessian pattern's slots _sK[t, e], or H v's entries). The callers zero what is added",
       "into. symgraph.runtime.separable calls them."]


class SumKind:
    """What the emitter needs of one kind of term: its value+gradient program, its program of
    the value and the local Hessian's lower-triangle nonzeros (in the order of `pairs`, each
    (i, j) with i >= j over the term's k variables)."""

    def __init__(self, gradient: Program, hessian: Program, pairs: Sequence[tuple[int, int]]
                 ) -> None:
        self.gradient, self.hessian, self.pairs = gradient, hessian, list(pairs)
        self.k = len(gradient.inputs)


def _live(p: Program, skip_value: bool) -> Program:
    """`p` without the steps its outputs (after the value, with `skip_value`) do not read."""
    outputs = p.outputs[1:] if skip_value else p.outputs
    needed = {o.value for _, o in outputs if o.kind == NAME}
    kept = []
    for step in reversed(p.steps):
        if step.target in needed:
            kept.append(step)
            needed.update(o.value for o in step.operands if o.kind == NAME)
    return replace(p, steps=tuple(reversed(kept)))


def _renamed(p: Program, suffix: str, indent: str) -> tuple[list[str], list[str], list[str]]:
    """(loads of the inputs from the term's row, the steps, the outputs' operands), every name
    of `p` suffixed."""
    names = set(p.inputs) | {s.target for s in p.steps}

    def rename(code: str) -> str:
        return _WORD.sub(lambda m: m.group(0) + suffix if m.group(0) in names else m.group(0),
                         code)

    steps = []
    for line in step_lines(p, "nb", indent):
        code, sep, comment = line.partition("  # ")
        steps.append(rename(code) + sep + comment)
    outputs = [rename(operand_text(operand)) for _, operand in p.outputs]
    loads = [f"{indent}{name}{suffix} = _x[_row[{j}]]" for j, name in enumerate(p.inputs)]
    return loads, steps, outputs


def _loop(number: int, p: Program) -> tuple[list[str], list[str]]:
    """The head of kind `number`'s loop (reading its term's row and variables, its steps) and
    the outputs' operands."""
    loads, steps, outputs = _renamed(p, f"_k{number}", _I2)
    head = [f"{_I1}for _t in range(_i{number}.shape[0]):", f"{_I2}_row = _i{number}[_t]",
            *loads, *steps]
    return head, outputs


def _value(kinds: Sequence[SumKind]) -> list[str]:
    tables = "".join(f", _i{n}" for n in range(len(kinds)))
    lines = [JIT_SUM, f"def value(_x{tables}):", f'{_I1}"""The sum at _x."""', f"{_I1}_f = 0.0"]
    for n, kind in enumerate(kinds):
        value = replace(kind.gradient, outputs=kind.gradient.outputs[:1])
        head, outputs = _loop(n, _live(value, False))
        lines += [*head, f"{_I2}_f += {outputs[0]}"]
    return lines + [f"{_I1}return _f"]


def _value_grad(kinds: Sequence[SumKind]) -> list[str]:
    tables = "".join(f", _i{n}" for n in range(len(kinds)))
    lines = [JIT_SUM, f"def value_grad(_x, _g{tables}):",
             f'{_I1}"""The sum at _x; its gradient added into _g."""', f"{_I1}_f = 0.0"]
    for n, kind in enumerate(kinds):
        head, outputs = _loop(n, kind.gradient)
        lines += [*head, f"{_I2}_f += {outputs[0]}"]
        lines += [f"{_I2}_g[_row[{j}]] += {o}" for j, o in enumerate(outputs[1:])]
    return lines + [f"{_I1}return _f"]


def _hessian(kinds: Sequence[SumKind]) -> list[str]:
    tables = "".join(f", _i{n}, _s{n}" for n in range(len(kinds)))
    lines = [JIT_SUM, f"def hessian(_x, _h{tables}):",
             f'{_I1}"""Each term\'s lower-triangle Hessian entries added into _h at the '
             'pattern\'s slots."""']
    for n, kind in enumerate(kinds):
        head, outputs = _loop(n, _live(kind.hessian, True))
        lines += [*head, f"{_I2}_slot = _s{n}[_t]"]
        lines += [f"{_I2}_h[_slot[{e}]] += {o}" for e, o in enumerate(outputs[1:])]
    return lines


def _hessp(kinds: Sequence[SumKind]) -> list[str]:
    tables = "".join(f", _i{n}" for n in range(len(kinds)))
    lines = [JIT_SUM, f"def hessp(_x, _v, _r{tables}):",
             f'{_I1}"""Each term\'s local Hessian times the local part of _v, added into '
             '_r."""']
    for n, kind in enumerate(kinds):
        head, outputs = _loop(n, _live(kind.hessian, True))
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
    steps = "\n".join(line for kind in kinds for p in (kind.gradient, kind.hessian)
                      for line in step_lines(p, "nb", ""))
    vector = sorted(vecmath_calls(steps))
    lines = ['"""' + docstring_text(title), "", f"Generated by symgraph {version}; regenerate "
             "rather than edit. Imports NumPy and Numba (and symgraph's vector math).", ""]
    lines += [INDENT + docstring_text(d) for d in description]
    lines += ["", *HOW, '"""', "", "import math", "", "import numpy as np",
              "from numba import njit"]
    if vector:
        lines.append(f"from symgraph.backends.numba.vecmath import {', '.join(vector)}")
    preludes = needed_preludes(programs, "nb_prelude")
    if preludes:
        lines += ["", *preludes]
    for body in bodies:
        lines += ["", "", *body]
    return "\n".join(lines) + "\n"
