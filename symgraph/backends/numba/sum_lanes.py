"""Emit the batch kernels of a large sum of small terms (runtime.separable): many points at
once, the points as SIMD lanes.

The fused kernels (backends.numba.sums) take one point and loop over the terms. A batch runs
the same loops with the points inside: for a block of points, each term's variables are rows
of the block (``_XT[v, j]``: variable v of point j, copied in once), its parameters numbers,
and one loop over the block's points runs the kind's steps in lane form (vecmath for exp,
log, sin...), adding its value and partials into the block's rows of the sum and the gradient
(``_G[v, j]``). The loop is the same for every term of a kind, so the kernel's size (and its
compile time) is the kinds', whatever the number of terms; LLVM vectorises it across points.

Per point, the terms are added in the fused kernels' order, so a batch's values equal the
1-point kernels' but for vecmath's last bit. vecmath's functions exact only in a range flag
their points (``_F[p]``, as the straight-line lane kernels do: backends.numba.batch's
LIMITED); the caller computes a flagged point again with the 1-point kernel (libm).

``value_batch(_X, _OUT, _XT, _G, _F, tables...)`` and ``value_grad_batch(...)``: rows of `_X`
are points (the variables in order), rows of `_OUT` the sum (and the gradient after it); `_XT`
(variables, block) and `_G` (rows, block: the gradient's, then the sum's) are the caller's
scratch, `_F` (N) the points' flags (empty when no kind has a limited vecmath call). The
callers add the sum's constant terms.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ...lower.schedule import Program
from ..common import INDENT, step_lines
from .batch import range_tests
from .sum_kinds import JIT_SUM, SumKind, renamed, suffixed, tables, value_only

_I1, _I2, _I3, _I4 = (INDENT * k for k in range(1, 5))
LANES = 64  # points a block (the callers' `_XT.shape[1]`, at most): ``_R``'s rows apart


class _Select(ast.NodeTransformer):
    def visit_IfExp(self, node: ast.IfExp) -> ast.Call:
        self.generic_visit(node)
        return ast.Call(ast.Name("vwhere", ast.Load()), [node.test, node.body, node.orelse], [])


def _selects(line: str) -> str:
    """A step's line with its if-expressions as ``vwhere(c, a, b)`` (vecmath's select): Numba
    compiles an if-expression to a branch, and a branch keeps LLVM from vectorising the loop
    (weibull@463's ``x == 0`` guard: 21 us a point, scalar)."""
    code, sep, comment = line.partition("  # ")
    if " if " not in code:
        return line
    indent = code[:len(code) - len(code.lstrip())]
    tree = _Select().visit(ast.parse(code.strip()))
    return indent + ast.unparse(tree) + sep + comment


def _flag_row(k: int) -> int:
    """Where in ``_R`` a block's flags are, for kinds of at most `k` variables."""
    return (2 * k + 1) * LANES


def _kind_loop(number: int, kind: SumKind, p: Program, gradient: bool, kinds_k: int
               ) -> list[str]:
    """Kind `number`'s loop over its terms, in it one loop over the block's points running
    the steps, their results in rows of ``_R`` (one array, rows at constant distances), then
    added into their rows of ``_G``. LLVM vectorises a loop only if its run-time overlap
    checks of distinct arrays' rows stay within its limit (8): the steps' loop reads a term's
    variables' rows of ``_XT`` (at most 8, `ad.terms.MAX_TERM_VARIABLES`) and writes ``_R``
    alone; a kind whose terms all read the same variables (a likelihood's parameters over
    its data) copies them into ``_R`` once and adds its terms' results up there."""
    k = kind.k
    loads, steps, outputs = renamed(p, number, k, _I4, "lanes", f"_R[{{}} * {LANES} + _j]")
    steps = list(map(_selects, steps))
    # a flag is a row of _R too (a bool array written in the loop kept it scalar: 21 us a point
    # against 2.6 for weibull@463)
    flag_row = _flag_row(kinds_k)
    flags = [f"{_I4}_R[{flag_row} + _j] += vwhere({suffixed(flag, p, number)}, 1.0, 0.0)"
             for flag in dict.fromkeys(f for s in p.steps for f in range_tests(s))]
    results = outputs if gradient else outputs[:1]
    rows = ["_sum", *(f"_r{j}" for j in range(k))]
    out = [(k + e) * LANES for e in range(len(results))]  # each result's row of _R
    params = [line[len(_I1):] for line in loads[k:]]  # once a term
    copies = [line for j in range(k) for line in (
        f"{_I3}for _j in range(_m):", f"{_I4}_R[{j * LANES} + _j] = _XT[_r{j}, _j]")]
    adds = [line for e in range(len(results)) for line in (
        f"{_I3}for _j in range(_m):", f"{_I4}_G[{rows[e]}, _j] += _R[{out[e]} + _j]")]
    if kind.shared:  # (the table's first row is every row)
        lines = [f"{_I2}if _i{number}.shape[0] > 0:"]
        lines += [f"{_I3}_r{j} = _i{number}[0, {j}]" for j in range(k)]
        lines += copies + [f"{_I3}for _j in range(_m):"]
        lines += [f"{_I4}_R[{o} + _j] = 0.0" for o in out]
        lines += [f"{_I3}for _t in range(_i{number}.shape[0]):"]
        lines += [INDENT + line for line in params]
        lines += [f"{_I4}for _j in range(_m):"]
        lines += [INDENT + line for line in [*loads[:k], *steps, *flags]]
        lines += [f"{_I4}{INDENT}_R[{o} + _j] += {r}" for o, r in zip(out, results)]
        return lines + adds
    # the variables' rows read in place (LLVM checks _R against each: at most 8, its limit)
    lines = [f"{_I2}for _t in range(_i{number}.shape[0]):"]
    lines += [f"{_I3}_r{j} = _i{number}[_t, {j}]" for j in range(k)]
    lines += params
    loads = [line.replace(f"_R[{j} * {LANES} + _j]", f"_XT[_r{j}, _j]")
             for j, line in enumerate(loads[:k])]
    lines += [f"{_I3}for _j in range(_m):", *loads, *steps, *flags]
    lines += [f"{_I4}_R[{o} + _j] = {r}" for o, r in zip(out, results)]
    return lines + adds


def _batch(kinds: Sequence[SumKind], gradient: bool) -> list[str]:
    name = "value_grad" if gradient else "value"
    what = "the sum and its gradient" if gradient else "the sum"
    flagged = bool(flag_tests(kinds))
    kmax = max(k.k for k in kinds)
    lines = [JIT_SUM, f"def {name}_batch(_X, _OUT, _XT, _G, _F{tables(kinds)}):",
             f'{_I1}"""Rows of _X into {what} in rows of _OUT, _XT.shape[1] points at a '
             'time' + ('; _F[p]: point p has an argument beyond vecmath\'s exact range' if flagged
                       else '') + '."""',
             f"{_I1}_n, _b = _XT.shape[0], _XT.shape[1]",
             f"{_I1}_w = _n - _n % 8  # variables copied in tiles of 8 (a point's cache line)",
             f"{_I1}_sum = _G.shape[0] - 1  # the row of the sum",
             f"{_I1}_R = np.empty({_flag_row(kmax) + LANES})"
             "  # a term's variables and results, the block's flags",
             f"{_I1}for _s in range(0, _X.shape[0], _b):",
             f"{_I2}_m = min(_b, _X.shape[0] - _s)",
             *_copy("tile(_X, _s + _j, _u, _XT, _u, _j)",
                    "_XT[_u + _v, _j] = _X[_s + _j, _u + _v]", "_XT[_v, _j] = _X[_s + _j, _v]"),
             f"{_I2}for _v in range(_G.shape[0]):", f"{_I3}for _j in range(_m):",
             f"{_I4}_G[_v, _j] = 0.0"]
    if flagged:
        lines += [f"{_I2}for _j in range(_m):", f"{_I3}_R[{_flag_row(kmax)} + _j] = 0.0"]
    for n, kind in enumerate(kinds):
        p = kind.gradient if gradient else value_only(kind.gradient)
        lines += _kind_loop(n, kind, p, gradient, kmax)
    if flagged:
        lines += [f"{_I2}for _j in range(_m):",
                  f"{_I3}_F[_s + _j] = _R[{_flag_row(kmax)} + _j] != 0.0"]
    if gradient:
        lines += _copy("tile(_G, _u, _j, _OUT, _s + _j, 1 + _u)",
                       "_OUT[_s + _j, 1 + _u + _v] = _G[_u + _v, _j]",
                       "_OUT[_s + _j, 1 + _v] = _G[_v, _j]")
    return lines + [f"{_I2}for _j in range(_m):", f"{_I3}_OUT[_s + _j, 0] = _G[_sum, _j]"]


def flag_tests(kinds: Sequence[SumKind]) -> list[str]:
    """The out-of-range tests of the kinds' vecmath calls: none, and a batch needs no
    flags (the caller computes a flagged point again with the 1-point kernel, libm's)."""
    return [flag for kind in kinds for s in kind.gradient.steps for flag in range_tests(s)]


def _copy(tile: str, one: str, rest: str) -> list[str]:
    """A block's copy between points' rows and the variables' rows: 8 x 8 tiles by the
    runtime's `tile` (vector loads, shuffles, vector stores: a loop of scalar copies took ~1
    ns a value), a tile's points past the last 8 one by one, then the variables past the last
    tile."""
    return [f"{_I2}for _u in range(0, _w, 8):", f"{_I3}for _j in range(0, _m - _m % 8, 8):",
            f"{_I4}{tile}", f"{_I3}for _j in range(_m - _m % 8, _m):",
            f"{_I4}for _v in range(8):", f"{_I4}{_I1}{one}",
            f"{_I2}for _v in range(_w, _n):", f"{_I3}for _j in range(_m):", f"{_I4}{rest}"]


def batch_kernel_lines(kinds: Sequence[SumKind]) -> list[str]:
    """``value_batch`` and ``value_grad_batch`` of `kinds` (beside the 1-point kernels)."""
    return [*_batch(kinds, False), "", "", *_batch(kinds, True)]


def lane_code(kinds: Sequence[SumKind]) -> str:
    """The batch kernels' steps and flag tests (what they call of vecmath)."""
    flags = flag_tests(kinds)
    return "\n".join([*(_selects(line) for kind in kinds
                         for line in step_lines(kind.gradient, "lanes", "")),
                       *flags, *(["vwhere(flag, 1.0, 0.0)"] if flags else [])])
