"""The tape's instruction set, derived from the op table: names, codes, arities, vector ops.

Codes are stable: the tape-only instructions come first with fixed codes (`SUB`, `NMUL`,
`SINCOS`, the `FUSED` ones), then the op table's entries in table order, so registering an op
appends a code and never renumbers the others. (An op moved inside `symgraph.ir.ops` does
renumber, which is harmless: the interpreter is generated from the table, and cached tapes are
keyed by symgraph's code.)

The vector ops, computed by the interpreter a block at a time with
`symgraph.backends.numba.vecmath` instead of libm, are the one-operand ops whose ``lanes``
template is a vecmath expression (plus `sincos`). vsin and vcos reduce exactly only up to
``SIN_COS_LIMIT``; an op using them on its operand itself (``vsin({0})``) gets a libm fix-up
loop for larger arguments, one using them on anything else stays a scalar op.

An op the interpreter cannot take (a name that is no identifier, or whose constant would shadow
one of the interpreter's names; more than three operands; a template that does not render) is
left out with the reason, and the tape builder refuses it with that reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# Two instructions made one by the tape's `fuse` pass (`symgraph.backends.tape.passes`): a
# `producer` whose result only a `consumer` reads, (a op b) then t op c, becomes one instruction
# on a, b, c: its expression, the two operations in the same order, so the numbers are the
# same bit for bit (Numba contracts no a * b + c into an FMA without fastmath). `sides`: where
# the producer's result may sit in the consumer, 1 left, 2 right, 3 either (c + t is t + c bit
# for bit: IEEE addition and multiplication commute). The name, its expression on {a} {b} {c}.
FUSED = (
    ("add3", "{a} + {b} + {c}", "add", "add", 3),
    ("mul3", "{a} * {b} * {c}", "mul", "mul", 3),
    ("muladd", "{a} * {b} + {c}", "mul", "add", 3),
    ("sub3", "{a} - {b} - {c}", "sub", "sub", 1),
    ("mulsub", "{c} - {a} * {b}", "mul", "sub", 2),
)
# Instructions with a constant operand (an immediate), for a batch's lanes
# (`symgraph.backends.tape.immediate`): the `base` instruction whose operand in `slot` is a
# constant's register, read as one number instead of a row of lanes: a constant then takes no
# row of the lane block in cache (cubic_eos@74: 2,693 of 2,933 registers are constants). The
# same operation on the same numbers, bit for bit. The rows and `apply` run them as the base
# (its register holds the constant). Chosen on FIT families' tapes at ~3,000-5,000 operations:
# the constant operands they have (K * x, K / x, K - x, K * x * y, x * y * K, K * x + y,
# K - x * y; K + x). The name, the base, the constant's slot.
IMMEDIATE = (
    ("kmul", "mul", 0),
    ("kadd", "add", 0),
    ("ksub", "sub", 0),
    ("kdiv", "div", 0),
    ("kmul3", "mul3", 0),
    ("mul3k", "mul3", 2),
    ("kmuladd", "muladd", 0),
    ("mulsubk", "mulsub", 2),
)
# Bases whose operands a and b swap bit for bit (IEEE addition and multiplication commute,
# zero signs too), so a constant in b becomes one in a.
COMMUTING = ("add", "mul", "mul3", "muladd", "mulsub")
# `r_t = r_a - r_b` (a sum term printed as subtraction), `r_t = -(r_a * r_b)` (a product with
# an odd number of negated factors), `r_t, r_c = sincos(r_a)` (sin and cos of one value, its
# second target in the third operand slot), then the fused instructions, then the immediate
# ones.
TAPE_ONLY = ("sub", "nmul", "sincos", *(name for name, *_ in FUSED),
             *(name for name, *_ in IMMEDIATE))
_BASE_ARITY = {"add": 2, "mul": 2, "sub": 2, "div": 2, **{name: 3 for name, *_ in FUSED}}
TAPE_ONLY_ARITIES = (2, 2, 1, *(3 for _ in FUSED),
                     *(_BASE_ARITY[base] for _, base, _ in IMMEDIATE))
SUB, NMUL, SINCOS = range(3)
FUSED_FIRST = 3  # fused instructions' codes: FUSED_FIRST ... FUSED_FIRST + len(FUSED) - 1
IMMEDIATE_FIRST = FUSED_FIRST + len(FUSED)  # then the immediate ones
# The structural ops' expressions on {a} {b}, as the lanes compute them (`_arithmetic`; the
# immediate instructions' bases, with the fused ones).
BINARY_FORMS = {"add": "{a} + {b}", "mul": "{a} * {b}", "sub": "{a} - {b}", "div": "{a} / {b}"}


def base_form(base: str) -> str:
    """The expression of an immediate instruction's `base` on {a} {b} {c}."""
    return BINARY_FORMS.get(base) or next(form for name, form, *_ in FUSED if name == base)
# The ops the tape builder emits itself (chains, small powers, negations): every table has them.
STRUCTURAL = ("add", "mul", "neg", "div")

# vecmath functions exact only for |x| <= their limit (a vecmath constant).
RANGE_LIMITED = {"vsin": "SIN_COS_LIMIT", "vcos": "SIN_COS_LIMIT", "vtan": "SIN_COS_LIMIT",
                 "vsinh": "HYPERBOLIC_LIMIT", "vcosh": "HYPERBOLIC_LIMIT",
                 "vasinh": "ASINH_LIMIT"}
# vecmath functions exact only where their vecmath flag is false (as
# `symgraph.backends.numba.batch.LIMITED`'s): lanes where it is true are recomputed with the
# op's `nb` template (libm, or symgraph's scalar special function).
FLAGGED = {"vpow": "vpowoff", "vatan2": "vatan2off", "vlgamma": "vgammaoff",
           "vdigamma": "vgammaoff"}
# Names of the generated interpreter module that no op constant may take.
RESERVED = frozenset({"ARITIES", "ASINH_LIMIT", "FUSED_OPCODES", "HYPERBOLIC_LIMIT",
                      "IMMEDIATE_OPCODES", "INSTRUCTION_NAMES", "LANE_OPCODES",
                      "MAX_BLOCK", "SIMD", "SIN_COS_LIMIT", "TABLE", "VECTOR_OPCODES"})
_OPERANDS = ("a", "b", "c")


class VectorForm:
    """How `_unary` computes a vector op: `loop`, its lane template on ``src[j]``; for one
    using a range-limited function, that function's `limit` (a vecmath constant), or for a
    flagged one its `flag` (a vecmath function, true where a value is beyond the range), and
    on ``x`` the lane template (`near`) and the op's `nb` template beyond the range (`far`)."""

    __slots__ = ("far", "flag", "limit", "loop", "near")

    def __init__(self, loop: str, limit: str | None = None, near: str | None = None,
                 far: str | None = None, flag: str | None = None) -> None:
        self.loop, self.limit, self.near, self.far, self.flag = loop, limit, near, far, flag


class LaneForm:
    """How `_lanes` computes an op the lane interpreter runs as one loop over the lanes (on
    ``a, b, c``, the lanes' operands): `loop`, its expression: the op's two-operand vecmath
    template, else its ``nb`` template (the row path's); for a flagged vecmath function, `flag`,
    the expression true where a lane needs `far`, the ``nb`` template (libm)."""

    __slots__ = ("far", "flag", "loop")

    def __init__(self, loop: str, flag: str | None = None, far: str | None = None) -> None:
        self.loop, self.flag, self.far = loop, flag, far


class InstructionSet:
    """The instructions of one op table: code ``k`` is ``names[k]``. (Plain classes, not
    dataclasses: this module is imported on the tape's warm path.)"""

    __slots__ = ("arities", "lanes", "names", "preludes", "refused", "scalar", "vector")

    def __init__(self, names: tuple[str, ...], arities: tuple[int, ...],
                 scalar: tuple[str, ...], vector: Mapping[str, VectorForm],
                 refused: Mapping[str, str], preludes: tuple[str, ...] = (),
                 lanes: Mapping[str, LaneForm] | None = None) -> None:
        self.names = names
        self.arities = arities  # operands read (a variadic op is chained: 2)
        self.scalar = scalar  # per code: its `nb` template on a, b, c ("" for sub...sincos)
        self.vector = vector  # the vector ops, in code order (sincos not included)
        self.refused = refused  # ops of the table left out, and why
        self.preludes = preludes  # lines the scalar templates need (their ops' nb_prelude)
        self.lanes = lanes or {}  # ops `run_lanes` runs a loop per op (`LaneForm`), code order

    @property
    def codes(self) -> dict[str, int]:
        return {name: code for code, name in enumerate(self.names)}

    def digest(self) -> str:
        """A digest of everything the interpreter's op-specific code is made of: the generated
        module records it (`TABLE`), so the shipped one is known without rendering a source."""
        import hashlib

        forms = [(name, f.loop, f.limit, f.near, f.far) + ((f.flag,) if f.flag else ())
                 for name, f in self.vector.items()]
        lanes = [(name, f.loop, f.flag, f.far) for name, f in self.lanes.items()]
        text = repr((self.names, self.arities, self.scalar, forms)
                    + ((self.preludes,) if self.preludes else ()) + (lanes,))
        return hashlib.sha256(text.encode()).hexdigest()[:24]


def calls(code: str, names: Iterable[str]) -> set[str]:
    """Which of `names` `code` calls (``name(`` not preceded by a name character). No regex:
    this runs on the tape's warm path, and compiling one costs more than the scan."""
    found = set()
    for name in names:
        at = code.find(name + "(")
        while at >= 0:
            if at == 0 or not (code[at - 1].isalnum() or code[at - 1] in "_."):
                found.add(name)
                break
            at = code.find(name + "(", at + 1)
    return found


def _constant(name: str) -> str:
    return name.upper()


def _vector_form(spec: Any, vecmath_names: frozenset[str]) -> VectorForm | None:
    """The op's vector form, or None when it runs as a scalar op (see the module docstring)."""
    if spec.lanes is None or spec.arity != 1:
        return None
    near = spec.render("lanes", ["x"])
    called = calls(near, vecmath_names)
    if not called:
        return None  # no vecmath function: nothing to gain over the scalar loop
    loop = spec.render("lanes", ["src[j]"])
    limited = sorted(called & set(RANGE_LIMITED)) + sorted(called & set(FLAGGED))
    if not limited:
        return VectorForm(loop)
    if len(limited) > 1 or near != f"{limited[0]}(x)":
        return None  # a limited function of a computed value: no cheap range check
    far = spec.render("nb", ["x"])
    if limited[0] in FLAGGED:
        return VectorForm(loop, near=near, far=far, flag=FLAGGED[limited[0]])
    return VectorForm(loop, RANGE_LIMITED[limited[0]], near, far)


def _lane_form(spec: Any, arity: int, template: str, vecmath_names: frozenset[str]
               ) -> LaneForm:
    """The op's loop in `run_lanes` (not for the vector ops and the structural ones, which have
    their own): a two-operand op whose lane template calls vecmath runs that template (a
    flagged function only as the whole template, ``vpow(a, b)``, with libm where its flag is
    true), any other op its ``nb`` template, the row path's numbers bit for bit."""
    if arity == 2 and spec.lanes is not None:
        near = spec.render("lanes", ["a", "b"])
        called = calls(near, vecmath_names)
        flagged = sorted(called & set(FLAGGED))
        if called and not flagged and not called & set(RANGE_LIMITED):
            return LaneForm(near)
        if len(flagged) == 1 and near == f"{flagged[0]}(a, b)":
            return LaneForm(near, f"{FLAGGED[flagged[0]]}(a, b)", template)
    return LaneForm(template)


def instruction_set(ops: Mapping[str, Any], vecmath_names: frozenset[str]) -> InstructionSet:
    """The instruction set of the op table `ops`; `vecmath_names` are the functions lane
    templates may call (those of `symgraph.backends.numba.vecmath`)."""
    names, arities = list(TAPE_ONLY), list(TAPE_ONLY_ARITIES)
    scalar = (["", "", ""] + [form.format(a="a", b="b", c="c") for _, form, *_ in FUSED]
              + [base_form(base).format(a="a", b="b", c="c") for _, base, _ in IMMEDIATE])
    vector: dict[str, VectorForm] = {}
    lanes: dict[str, LaneForm] = {}
    refused: dict[str, str] = {}
    taken = {_constant(name) for name in TAPE_ONLY}
    preludes: dict[str, None] = {}
    for name, spec in ops.items():
        arity = 2 if spec.arity < 0 else spec.arity
        if not name.isidentifier() or _constant(name) in RESERVED | taken:
            refused[name] = "its name cannot be an interpreter constant"
        elif getattr(spec.evaluate, "no_numbers", False):  # frontends.userfunctions' mark
            refused[name] = "it is an undefined function (no numbers)"
        elif not 1 <= arity <= 3:
            refused[name] = f"the tape takes ops of 1 to 3 operands, not {arity}"
        else:
            try:
                template = spec.render("nb", list(_OPERANDS[:arity]))
                form = _vector_form(spec, vecmath_names)
                lane = (None if form is not None or name in STRUCTURAL
                        else _lane_form(spec, arity, template, vecmath_names))
            except Exception as error:  # noqa: BLE001 - a user template may fail any way
                refused[name] = f"its template does not render: {error!r}"
                continue
            names.append(name)
            arities.append(arity)
            scalar.append(template)
            taken.add(_constant(name))
            preludes.update(dict.fromkeys(getattr(spec, "nb_prelude", ())))
            if form is not None:
                vector[name] = form
            if lane is not None:
                lanes[name] = lane
    missing = [name for name in STRUCTURAL if name not in names]
    if missing:
        raise ValueError(f"an op table for the tape needs the ops {missing}")
    return InstructionSet(tuple(names), tuple(arities), tuple(scalar), vector, refused,
                          tuple(preludes), lanes)
