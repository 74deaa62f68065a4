"""What the emitters of a sum's kernels read of each kind of term (backends.numba.sums for
one point, backends.numba.sum_lanes for batches): the kind's programs, its tables' argument
names, and its steps with every name suffixed by the kind's number."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ...lower.schedule import NAME, Program
from ..common import operand_text, step_lines

JIT_SUM = '@njit(cache=True, error_model="numpy", nogil=True)'
_WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


class SumKind:
    """What the emitter needs of one kind of term: its value+gradient program, its program of
    the value and the local Hessian's lower-triangle nonzeros (in the order of `pairs`, each
    (i, j) with i >= j over the term's k variables)."""

    def __init__(self, gradient: Program, hessian: Program, pairs: Sequence[tuple[int, int]],
                 k: int | None = None, shared: bool = False) -> None:
        self.gradient, self.hessian, self.pairs = gradient, hessian, list(pairs)
        # inputs: k variables, then the term's parameters (its row of the kind's ``_cK``)
        self.k = len(gradient.inputs) if k is None else k
        self.m = len(gradient.inputs) - self.k
        self.shared = shared  # every term reads the same variables (sum_lanes)


def tables(kinds: Sequence[SumKind], slots: bool = False) -> str:
    """The kernels' table arguments after their arrays: per kind ``_iK`` (its terms'
    variables), ``_cK`` (their parameters) if it has any, ``_sK`` (Hessian slots) with
    `slots`."""
    return "".join(f", _i{n}" + (f", _c{n}" if kind.m else "") + (f", _s{n}" if slots else "")
                   for n, kind in enumerate(kinds))


def live(p: Program, skip_value: bool) -> Program:
    """`p` without the steps its outputs (after the value, with `skip_value`) do not read."""
    outputs = p.outputs[1:] if skip_value else p.outputs
    needed = {o.value for _, o in outputs if o.kind == NAME}
    kept = []
    for step in reversed(p.steps):
        if step.target in needed:
            kept.append(step)
            needed.update(o.value for o in step.operands if o.kind == NAME)
    return replace(p, steps=tuple(reversed(kept)))


def value_only(p: Program) -> Program:
    """`p` (a kind's value+gradient program) with the value alone: its output and the steps
    that it reads."""
    return live(replace(p, outputs=p.outputs[:1]), False)


def renamed(p: Program, number: int, k: int, indent: str, form: str = "nb", point: str = "_x"
            ) -> tuple[list[str], list[str], list[str]]:
    """(loads of the inputs: variables from the term's row of `point`, parameters from its row
    of ``_cK``; the steps in `form`; the outputs' operands), every name of `p` suffixed by
    its kind's number (``t3_k1``) so that kinds do not share locals."""
    suffix = f"_k{number}"
    names = _names(p)  # (once: a set per line made the kernels of 13,000 steps take 5 s)
    steps = []
    for line in step_lines(p, form, indent):
        code, sep, comment = line.partition("  # ")
        steps.append(suffixed(code, p, number, names) + sep + comment)
    outputs = [suffixed(operand_text(operand), p, number, names) for _, operand in p.outputs]
    loads = [f"{indent}{name}{suffix} = " + (point.format(j) if "{" in point else
                                             f"{point}[_row[{j}]]") if j < k else
             f"{indent}{name}{suffix} = _c{number}[_t, {j - k}]" for j, name in enumerate(p.inputs)]
    return loads, steps, outputs


def _names(p: Program) -> set[str]:
    return set(p.inputs) | {s.target for s in p.steps}


def suffixed(code: str, p: Program, number: int, names: set[str] | None = None) -> str:
    """`code` (on `p`'s names: `names`, if given) with each of them suffixed by kind
    `number`'s suffix."""
    names = _names(p) if names is None else names
    return _WORD.sub(lambda m: m.group(0) + f"_k{number}" if m.group(0) in names
                     else m.group(0), code)
