"""Generate the tape interpreter of an op table as Python source (a real module for Numba).

`interpreter_source(instructions, vecmath_names)` is the module: the instruction codes as
constants, `apply` (every op with its ``nb`` template on operands a, b, c), `_unary` (the
vector ops with their ``lanes`` template, a block at a time) and `_lanes` (every other op but
the structural ones as one loop over a batch's lanes, the op tested outside the loop: its
``nb`` template, or for two-operand vecmath ops vpow/vatan2/vhypot their ``lanes`` one with a
libm fix-up where vecmath's flag says), then the interpreter proper
(`template.INTERPRETER`), the same for every table. The text depends only on the instruction
set (`symgraph.backends.tape.opcodes`) and this file: it is byte-identical run to run.

The interpreter of the op table as shipped is kept in the package as `standard.py`, linted and
tested like any module. After adding an op to `symgraph.ir.ops` or changing a template, rewrite
it with ``python -m symgraph.backends.tape.generate`` (a test fails until then; meanwhile tapes
run on a copy generated into the cache folder, compiled on first use).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

from ..files import write_atomically
from .opcodes import (
    BINARY_FORMS,
    FUSED,
    FUSED_FIRST,
    IMMEDIATE,
    InstructionSet,
    base_form,
    calls,
    instruction_set,
)
from .template import INTERPRETER

_HEADER = '''\
"""The tape interpreter of one op table, generated from it by
`symgraph.backends.tape.generate`: do not edit. Codes are `INSTRUCTION_NAMES`' positions
(`symgraph.backends.tape.opcodes`); `apply` computes every op with its op-table template
(``nb``), `_unary` the vector ops with theirs (``lanes``, `symgraph.backends.numba.vecmath`),
`_lanes` the other ops a loop per op over a batch's lanes, and the rest is the interpreter, the
same for every table (`symgraph.backends.tape.interpreter`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

'''

_TAPE_ONLY_NOTE = """\
# Codes: the tape-only instructions, then the op table in table order. Tape-only: `a - b`, for a
# sum term printed as subtraction (bit-identical to a + -b); `-(a * b)`, the last link of a
# product with an odd number of negated factors (rounding is symmetric, so (-a) * b is -(a * b)
# bit for bit): negations cost no instruction; `r_t, r_c = sincos(r_a)`, a value's sin and cos
# from one argument reduction, for the pairs reverse mode makes (sin(u) and its derivative
# cos(u)), its second target in its third operand slot; the fused instructions (`_fused`).
"""

_APPLY = '''\
@njit(error_model="numpy")
def apply(op, a, b, c):  # noqa: C901 - one flat dispatch is the point
    """The value of instruction `op` on operands a, b, c (c is read by three-operand ops
    only), each op by its op-table template. Not inlined: one compiled copy serves both
    interpreters' rare ops (inlining it twice cost 2.3 s more of the one-time compile for no
    measurable speed). LLVM turns the chain into a jump table."""
    if op == SUB:
        r = a - b
    elif op == NMUL:
        r = -(a * b)
'''

_VECTOR = """\
# Ops run as one loop over a whole block of instructions (`_unary`) with vecmath's
# vectorisable functions: a point's independent calls share SIMD lanes, and across a batch's
# lanes the loop is the one the vector code needs.
{vector}\
MAX_BLOCK = 256  # instructions a vector block gathers at most (its buffer's length)
SIMD = 8  # doubles per vector register (AVX-512); a multiple of narrower widths
_IS_VECTOR = np.zeros(len(INSTRUCTION_NAMES), np.bool_)  # a constant array in compiled code
_IS_VECTOR[list(VECTOR_OPCODES)] = True


@njit(error_model="numpy", inline="always")
def is_vector(op):
    return _IS_VECTOR[op]  # (`op in VECTOR_OPCODES` would link Numba's list code)
"""

_UNARY = '''\
@njit(error_model="numpy", inline="always")
def _unary(op, src, dst, n):  # noqa: C901 - one flat dispatch is the point
    """dst[:n] = op(src[:n]) for a vector op: one loop per op, nothing decoded inside it.
    vsin/vcos reduce exactly only up to SIN_COS_LIMIT: larger (and non-finite) arguments,
    which practice never meets, go to libm (the op's scalar template), in a scalar loop for
    the block."""
'''

_LANES = '''\
# Ops `run_lanes` runs as one loop per op over the lanes (`_lanes`), the op decoded once per
# instruction, not per lane: loops of arithmetic, selects and intrinsics vectorise, and the
# two-operand vecmath ops (vpow, vatan2, vhypot) run their vector code. Tape batch value+grad
# per point, one core, load ~6, before (a per-lane `apply`) -> after: weibull@463 (FIT, pow)
# 37-45 -> 7.6-11 us; held out: huber_regression@432 30-32 -> 6.6-7.4, tiered_cost@333 48-54 ->
# 9-15, composition@792 9-10 -> 6-8; arithmetic-only tapes unchanged (arrhenius, cubic_eos).
# Its cost: `symgraph precompile` CPU time 50.7 -> 54.2 s (fresh caches, one after the other,
# load ~5; the machine unloaded compiles in ~10-18 s).
{codes}\
_IS_LANE = np.zeros(len(INSTRUCTION_NAMES), np.bool_)
_IS_LANE[list(LANE_OPCODES)] = True
_ARITY = np.array(ARITIES, np.int64)


@njit(error_model="numpy", inline="always")
def is_lane(op):
    return _IS_LANE[op]


@njit(error_model="numpy")
def _lanes(op, ra, rb, rc, rt, n):  # noqa: C901 - one flat dispatch is the point
    """rt[:n] = op(ra[:n], rb[:n], rc[:n]) for a lane op (rt is none of the operands' rows):
    each op by its op-table template (``nb``; the two-operand vecmath ops by their ``lanes``
    one). vpow and vatan2 are exact only where their flag (vpowoff, vatan2off) is false: such
    lanes are recomputed with the op's libm template in a scalar loop for the block, as the
    straight-line lane kernels do. Not inlined: one compiled copy, called per instruction."""
'''

_FLAGGED = """\
        far = 0
        for j in range(n):
{load}\
            rt[j] = {loop}
            far |= _where({flag}, 1, 0)
        if far:  # value by value, so a lane's result never depends on its neighbours
            for j in range(n):
{load_far}\
                if {flag}:
                    rt[j] = {far}
"""

_LIMITED = """\
        far = 0
        for j in range(n):
            far |= _where({exact_at_src}, 0, 1)
        if far:  # value by value, so a value's result never depends on its neighbours
            for j in range(n):
                x = src[j]
                if {exact_at_x}:
                    dst[j] = {near}
                else:
                    dst[j] = {far}
        else:
            for j in range(n):
                dst[j] = {loop}
"""

# vecmath names the interpreter proper uses (its sincos instruction).
_SINCOS_NAMES = ("SIN_COS_LIMIT", "_where", "vcos", "vsin", "vsincos")


def interpreter_source(instructions: InstructionSet, vecmath_names: Iterable[str]) -> str:
    """The interpreter module of `instructions` (`vecmath_names`: what vecmath defines)."""
    vector = [name.upper() for name in (*instructions.vector, "sincos")]
    return "\n\n".join([
        _HEADER + _imports(instructions, vecmath_names) + "\n" + _constants(instructions),
        _apply(instructions),
        _VECTOR.format(vector=_fill(vector, "VECTOR_OPCODES = (", " " * 18, ")")),
        _unary(instructions),
        _lanes(instructions),
        _fused(),
        _immediate_slots(),
        _interpreter(),
    ])


def _interpreter() -> str:
    """`template.INTERPRETER` with `run_lanes`' arithmetic tests written in."""
    at = INTERPRETER.index(ARITHMETIC_MARK)
    return (INTERPRETER[:at] + _arithmetic()
            + INTERPRETER[INTERPRETER.index("\n", at) + 1:])


def _imports(instructions: InstructionSet, vecmath_names: Iterable[str]) -> str:
    available = set(vecmath_names)
    used = set(_SINCOS_NAMES)
    for scalar in instructions.scalar:  # `apply`'s templates may call vecmath too (vcbrt)
        used |= calls(scalar, available)
    for form in instructions.vector.values():
        used |= calls(form.loop, available)
        used |= {name for name in (form.limit, form.flag) if name}
    for lane in instructions.lanes.values():
        used |= calls(lane.loop, available) | calls(lane.flag or "", available)
    # ruff's isort order: constants, classes, then functions; numbers in names by value
    # (vlog1p, vlog2, vlog10).
    order = sorted(used, key=lambda n: (0 if n.isupper() else 1 if n[:1].isupper() else 2,
                                        [int(p) if p.isdigit() else p
                                         for p in re.split(r"(\d+)", n)]))
    # The scalar templates' own lines (`nb_prelude`): the special functions' imports as one
    # sorted import (ruff's isort form, before vecmath's), then any other line (user functions).
    special = "from symgraph.backends.numba.special import "
    preludes = instructions.preludes
    names = sorted(line[len(special):] for line in preludes if line.startswith(special))
    rest = [line for line in preludes if not line.startswith(special)]
    text = special + "(\n" + "".join(f"    {n},\n" for n in names) + ")\n" if names else ""
    text += ("from symgraph.backends.numba.vecmath import (\n"
             + "".join(f"    {name},\n" for name in order) + ")\n")
    return text + ("\n" + "".join(line + "\n" for line in rest) if rest else "")


def _constants(instructions: InstructionSet) -> str:
    names = instructions.names
    return (_TAPE_ONLY_NOTE
            + "INSTRUCTION_NAMES = (\n" + _fill((f'"{n}"' for n in names), "    ", "    ", ",")
            + ")\nARITIES = (\n" + _fill(map(str, instructions.arities), "    ", "    ", ",")
            + f')\nTABLE = "{instructions.digest()}"  # the digest of this instruction set\n'
            + _fill((n.upper() for n in names), "(", " ", f") = range({len(names)})"))


def _apply(instructions: InstructionSet) -> str:
    lines = []
    for code, name in enumerate(instructions.names[FUSED_FIRST:], FUSED_FIRST):
        lines += [f"    elif op == {name.upper()}:", f"        r = {instructions.scalar[code]}"]
    lines += ["    else:",
              "        r = math.nan  # unreachable: the builder emits only the opcodes above",
              "    return r"]
    return _APPLY + _lines(lines)


def _unary(instructions: InstructionSet) -> str:
    lines = []
    for k, (name, form) in enumerate(instructions.vector.items()):
        lines.append(f"    {'elif' if k else 'if'} op == {name.upper()}:")
        if form.limit is None and form.flag is None:
            lines += ["        for j in range(n):", f"            dst[j] = {form.loop}"]
        else:
            exact = ("abs({0}) <= " + form.limit if form.limit else f"not {form.flag}({{0}})")
            lines += _LIMITED.format(exact_at_src=exact.format("src[j]"), near=form.near,
                                     exact_at_x=exact.format("x"), far=form.far,
                                     loop=form.loop).splitlines()
    if not instructions.vector:
        lines.append("    pass  # no vector op but sincos")
    return _UNARY + _lines(lines)


def _lanes(instructions: InstructionSet) -> str:
    codes = instructions.codes
    lines = []
    for k, (name, form) in enumerate(instructions.lanes.items()):
        lines.append(f"    {'elif' if k else 'if'} op == {name.upper()}:")
        arity = instructions.arities[codes[name]]
        if form.flag is None:
            lines += ["        for j in range(n):", *_operands(form.loop, arity, 12),
                      f"            rt[j] = {form.loop}"]
        else:
            text = form.loop + form.flag
            lines += _FLAGGED.format(
                load="".join(f"{line}\n" for line in _operands(text, arity, 12)),
                load_far="".join(f"{line}\n" for line in _operands(form.far + form.flag, arity,
                                                                     16)),
                loop=form.loop, flag=form.flag, far=form.far).splitlines()
    if not instructions.lanes:
        lines.append("    pass  # every op has a loop of its own in run_lanes")
    listed = [n.upper() for n in instructions.lanes]
    codes_text = _fill(listed, "LANE_OPCODES = (", " " * 16, ",)" if len(listed) == 1 else ")")
    return _LANES.format(codes=codes_text) + _lines(lines)


_FUSED_DOC = '''\
# Fused instructions (`symgraph.backends.tape.opcodes.FUSED`, made by the tape's `fuse` pass):
# two arithmetic instructions as one, the same operations in the same order. On the lanes, a
# lane block is loaded and stored once instead of twice and one dispatch serves both.
{codes}\
_IS_FUSED = np.zeros(len(INSTRUCTION_NAMES), np.bool_)
_IS_FUSED[list(FUSED_OPCODES)] = True


@njit(error_model="numpy", inline="always")
def is_fused(op):
    return _IS_FUSED[op]


@njit(error_model="numpy", inline="always")
def _fused_rows(op, regs, operands, targets, s, e):
    """The block s..e of fused instructions `op` on one point's registers `regs`."""
'''

def _fused() -> str:
    """`_fused_rows`: a loop per fused instruction (`opcodes.FUSED`) on a point's registers."""
    names = [name.upper() for name, *_ in FUSED]
    rows = []
    for k, (name, form, *_) in enumerate(FUSED):
        rows += [f"    {'elif' if k else 'if'} op == {name.upper()}:",
                 "        for i in range(s, e):",
                 "            a, b, c = (regs[np.uint32(operands[i, 0])], "
                 "regs[np.uint32(operands[i, 1])],",
                 "                       regs[np.uint32(operands[i, 2])])",
                 f"            regs[np.uint32(targets[i])] = {form.format(a='a', b='b', c='c')}"]
    codes = _fill(names, "FUSED_OPCODES = (", " " * 17, ")")
    return _FUSED_DOC.format(codes=codes) + _lines(rows)


_IMMEDIATE_DOC = '''\
# Immediate instructions (`symgraph.backends.tape.opcodes.IMMEDIATE`, made for a batch's lanes
# by `symgraph.backends.tape.immediate`): an instruction whose operand in one slot (per code,
# or -1) is a constant, read once as the number `k` (from the tape's constants) instead of as a
# row of lanes.
_IMMEDIATE_SLOT = np.full(len(INSTRUCTION_NAMES), -1, np.int64)
'''
# The line of `template.INTERPRETER`'s `run_lanes` that `_arithmetic`'s tests replace.
ARITHMETIC_MARK = "        # ARITHMETIC: the structural, fused and immediate ops' loops"


def _immediate_slots() -> str:
    return _IMMEDIATE_DOC + _lines([f"_IMMEDIATE_SLOT[{name.upper()}] = {slot}"
                                    for name, _, slot in IMMEDIATE])


def _arithmetic() -> str:
    """`run_lanes`' tests of `op` and loops for the structural, fused and immediate
    instructions, on rows ti, ai, bi, ci of `regs` (the immediate ones' constant `k` read from
    `constants`), one chain of tests of one code, which LLVM makes one switch."""
    rows = {letter: f"regs[{letter}i, j]" for letter in "abc"}
    cases = [(name, form.format(**rows)) for name, form in BINARY_FORMS.items()]
    cases += [("nmul", "-(regs[ai, j] * regs[bi, j])"), ("neg", "-regs[ai, j]")]
    cases += [(name, form.format(**rows)) for name, form, *_ in FUSED]
    for name, base, slot in IMMEDIATE:
        letter = "abc"[slot]
        cases.append((name, base_form(base).format(**{**rows, letter: "k"}),
                      f"k = constants[np.uint32({letter}i - n_inputs)]"))
    lines = []
    for k, (name, expression, *load) in enumerate(cases):
        lines += [f"        {'elif' if k else 'if'} op == {name.upper()}:",
                  *(f"            {line}" for line in load), "            for j in range(lanes):",
                  f"                regs[ti, j] = {expression}"]
    return _lines(lines)


def _operands(text: str, arity: int, indent: int) -> list[str]:
    """The lines loading lane j's operands that `text` reads (a = ra[j], ...)."""
    names = [n for n in "abc"[:arity] if re.search(rf"(?<![\w.]){n}(?!\w)", text)]
    return [f"{' ' * indent}{n} = r{n}[j]" for n in names]


def _lines(lines: list[str]) -> str:
    # A long template keeps its line: the shipped module is linted, so say so there.
    return "".join(line + ("  # noqa: E501" if len(line) > 100 else "") + "\n" for line in lines)


def _fill(items: Iterable[str], start: str, indent: str, end: str, width: int = 100) -> str:
    """`start` + `items` joined by commas, filling lines of `width` columns (continued after
    `indent`) + `end`."""
    items = list(items)
    lines, line, first = [], start, True
    for k, item in enumerate(items):
        piece = item + (end if k == len(items) - 1 else ",")
        joined = line + ("" if first else " ") + piece
        if not first and len(joined) > width:
            lines.append(line)
            joined = indent + piece
        line, first = joined, False
    lines.append(line)
    return "\n".join(lines) + "\n"


STANDARD_PATH = Path(__file__).resolve().with_name("standard.py")


def standard_source() -> str:
    """The interpreter source of `OPS` as it is (the op table as shipped, in a process that
    registered no op of its own)."""
    from ...ir.ops import OPS
    from ..numba import vecmath

    names = vecmath.NAMES
    return interpreter_source(instruction_set(OPS, names), names)


def main() -> int:
    """Rewrite `standard.py` from the op table; prints whether it changed."""
    source = standard_source()
    if STANDARD_PATH.is_file() and STANDARD_PATH.read_text(encoding="utf-8") == source:
        print(f"{STANDARD_PATH} is up to date")
    else:
        write_atomically(STANDARD_PATH, source)
        print(f"rewrote {STANDARD_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
