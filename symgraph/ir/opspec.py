"""The record of one op (`OpSpec`), the views derived from the table, and registration.

`symgraph.ir.ops` fills the table with the built-in ops; `register` adds one more. Every stage
reads an op's fields (templates, forms, traits) instead of listing op names, so an op is
defined once: see docs/developing.md, "How to add an op".

This module imports no other symgraph module: with `ops` it is the root of the pipeline.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# An np.vectorize of a Python function whose time is not given: a call of a small Python
# function per element (erfc's math.erfc: ~70 ns).
PYTHON_ELEMENT_NS = 1000.0


@dataclass(frozen=True)
class OpSpec:
    """One op: its meaning, code, forms and traits. Only `name`, `arity`, `evaluate`,
    `partials` and `py` are required; every other field has a default derived from them (see
    `__post_init__`), and every stage reads the fields instead of listing op names."""

    name: str
    arity: int
    evaluate: Callable[..., Any]
    partials: Callable[[tuple, Any], tuple]
    py: Any
    np: Any = None  # None: the `py` template (math.* calls work on NumPy scalars only)
    nb: Any = None  # None: the `py` template
    latex: str | None = None  # None: \operatorname{name}\left(...\right)
    sympy: Callable[..., Any] | None = None  # None: the class named sympy_names[0] (or name)
    domain: tuple[tuple[float, float], ...] = ()  # (): DEFAULT_DOMAIN for every argument
    infix: str | None = None  # operator symbol for infix ops
    precedence: int = 100  # printing/parsing precedence; atoms and calls bind tightest
    commutative: bool = False
    np_prelude: tuple[str, ...] = field(default=())  # helper lines the NumPy template needs
    nb_prelude: tuple[str, ...] = field(default=())  # and the Numba one (imports of callees)
    cost: int = 1  # in multiplications: how a program's size is weighed (schedule.Program.cost)
    # ns per element of the `np` form where it is well above an ordinary NumPy op's
    # (runtime.interpret's INTERP_BATCH_NS_PER_OP): one that runs Python per element
    # (np.vectorize, 3-10,000x), several whole-array steps (cbrt, xlogy), NumPy's select
    # (np.where, ~6x an add), NumPy's float64 sin and cos, np.power of a non-integer exponent;
    # runtime.interpret weighs it. None: 0 for a ufunc, PYTHON_ELEMENT_NS for an np.vectorize.
    np_ns: float | None = None
    lanes: Any = None  # lane kernels' template (vecmath calls); None: the `nb` one
    # -- traits: what the stages ask about an op ----------------------------------------------
    title: str = ""  # human name (pictures, docs): "Multiply"; "": the name
    comparison: bool = False  # a 0/1 mask: derivative 0, prints as a relation (SymPy: one too)
    smooth: bool = True  # False: kinks, jumps or branch conditions inside its domain
    vectorises: bool = False  # `nb` is arithmetic, an LLVM intrinsic or a select: lanes as is
    integer_powers: bool = False  # a literal exponent 0 < |k| <= 4 is products: small_power
    folds: bool = False  # a call with more arguments folds pairwise: min(a, b, c)
    spellings: tuple[str, ...] | None = None  # call names the parser reads (None: the name,
    # unless infix); the first is how the text printer calls it
    sympy_names: tuple[str, ...] = ()  # SymPy classes that are this op, arguments in order
    method: bool = False  # a method of the graph tensors: t.exp()
    finite: bool = False  # value and partials finite wherever the arguments are (overflow of
    # products aside): derivatives through branches may drop their guard there (ad/guards.py)
    integer_arguments: tuple[int, ...] = ()  # positions that take integers (an order: besselj's
    # n): tests draw integers there; the partial in them is None (not a variable to vary)

    def __post_init__(self) -> None:
        default = {
            "np": self.py, "nb": self.py, "title": self.name,
            "latex": r"\operatorname{{" + self.name + r"}}\left({0}\right)",
            "spellings": () if self.infix else (self.name,),
            "domain": (DEFAULT_DOMAIN,) * (2 if self.arity < 0 else self.arity),
            "sympy": _sympy_class(self.sympy_names[0] if self.sympy_names else self.name),
            "np_ns": PYTHON_ELEMENT_NS if type(self.evaluate).__name__ == "vectorize" else 0.0,
        }
        for key, value in default.items():
            if getattr(self, key) in (None, "", ()):
                object.__setattr__(self, key, value)

    @property
    def call_name(self) -> str:
        """How text calls the op: ``sin(x)`` (infix ops have none: ``""``)."""
        return self.spellings[0] if self.spellings else ""

    def lane_step(self, exponent: float | str | None = None) -> bool:
        """Whether a step of this op joins a vectorised lane loop. `exponent` is the step's
        constant second operand (None if it has none): for an op with integer powers, it
        decides (a small power is products)."""
        if self.integer_powers and self.lanes is None:
            return exponent is not None and small_power(exponent) is not None
        return self.vectorises or self.lanes is not None

    def render(self, backend: str, operands: list[str]) -> str:
        template = {"py": self.py, "np": self.np, "nb": self.nb,
                    "lanes": self.nb if self.lanes is None else self.lanes}[backend]
        if callable(template):
            return template(operands)
        return template.format(*operands)


def _sympy_class(name: str) -> Callable[..., Any]:
    return lambda sp, *args: getattr(sp, name)(*args)


OPS: dict[str, OpSpec] = {}

# Printing / parsing precedence, Python's order.
PREC_COMPARE, PREC_ADD, PREC_MUL, PREC_NEG, PREC_POW, PREC_ATOM = 1, 2, 3, 4, 5, 100

DEFAULT_DOMAIN = (-3.0, 3.0)
SMALL_POWER_LIMIT = 4  # x**k for a literal integer 0 < |k| <= this is emitted as products


def small_power(exponent: str) -> int | None:
    """The k of ``x**k`` when a literal exponent is an integer ``0 < |k| <= 4``, else None.

    Every backend lowers such powers to multiplications (exact, and far cheaper than pow());
    this is the one place that decides which ones."""
    try:
        value = float(exponent)
    except ValueError:
        return None
    if value.is_integer() and 0 < abs(value) <= SMALL_POWER_LIMIT:
        return int(value)
    return None


# Named constants (folded to floats at once); no op or spelling may take these names.
CONSTANTS = {"pi": math.pi, "e": math.e, "E": math.e, "inf": math.inf, "oo": math.inf,
             "nan": math.nan}

# ---------------------------------------------------------------------------------------------
# Views derived from the table. They are updated in place when an op is registered, so a
# module that imported one keeps a live view; treat them as read-only.

CALLS: dict[str, str] = {}  # every spelling the parser reads as a call -> the op's name
ALIASES: dict[str, str] = {}  # the spellings that are not the op's own name (ln, arcsin, Abs)
INFIX: dict[str, OpSpec] = {}  # by symbol (the parser's view); "-" is both neg and binary minus
COMPARISONS: set[str] = set()  # the mask-valued ops, as a set for fast membership tests
_GENERATION = [0]


def generation() -> int:
    """A number that changes whenever the table does: caches derived from it compare it."""
    return _GENERATION[0]


def having(trait: str) -> tuple[str, ...]:
    """The names of the ops whose `trait` field is true, in table order."""
    return tuple(name for name, spec in OPS.items() if getattr(spec, trait))


def _derive() -> None:
    CALLS.clear()
    ALIASES.clear()
    INFIX.clear()
    COMPARISONS.clear()
    for spec in OPS.values():
        for spelling in spec.spellings:
            CALLS[spelling] = spec.name
            if spelling != spec.name:
                ALIASES[spelling] = spec.name
        if spec.infix and spec.arity != 1:
            INFIX[spec.infix] = spec
        if spec.comparison:
            COMPARISONS.add(spec.name)
    _GENERATION[0] += 1


# ---------------------------------------------------------------------------------------------
# Registration: adding an op is one OpSpec (see docs/developing.md, "How to add an op").

_RESERVED = frozenset({"const", "symbol"})  # node kinds that are not ops


def register(spec: OpSpec) -> OpSpec:
    """Add `spec` to the table; every stage picks it up (parser, printers, SymPy, derivatives,
    code generators). Raises ValueError if its name or a spelling is taken."""
    if not isinstance(spec, OpSpec):
        raise TypeError(f"register() takes an OpSpec, not {type(spec).__name__}")
    name = spec.name
    if not name.isidentifier() or name in _RESERVED or name in CONSTANTS:
        raise ValueError(f"{name!r} cannot name an op (an identifier, not const/symbol or a "
                         "named constant)")
    if name in OPS:
        raise ValueError(f"an op named {name!r} exists; unregister it first")
    if spec.arity == 0 or spec.arity < -1:
        raise ValueError(f"{name}: arity must be positive (or -1 for n-ary), got {spec.arity}")
    if spec.infix:
        raise ValueError(f"{name}: registered ops are called by name; infix syntax is fixed")
    taken = [s for s in spec.spellings if s in CALLS or s in CONSTANTS or not s.isidentifier()]
    if taken:
        raise ValueError(f"{name}: spellings {taken} are taken or not identifiers")
    if len(spec.domain) < max(spec.arity, 1):
        raise ValueError(f"{name}: give a domain interval for each of its {spec.arity} arguments")
    OPS[name] = spec
    _derive()
    return spec


def unregister(name: str) -> OpSpec:
    """Remove an op that `register` added (built-in ops stay); returns its spec."""
    if name in _BUILTIN:
        raise ValueError(f"{name!r} is a built-in op; only registered ops can be removed")
    spec = OPS.pop(name, None)
    if spec is None:
        raise ValueError(f"no registered op named {name!r}")
    _derive()
    return spec


def _callable_identity(f: Any) -> str:
    """Deterministic text for a template or rule: bytecode and constants (closures included),
    never an address; a built-in callable by its type and name."""
    parts, stack, seen = [], [f], 0
    while stack and seen < 64:
        item = stack.pop()
        seen += 1
        code = getattr(item, "__code__", None)
        if code is None and hasattr(item, "co_code"):
            code = item
        if code is None:
            inner = getattr(item, "pyfunc", None)  # np.vectorize
            parts.append(f"{type(item).__name__}:{getattr(item, '__name__', '')}")
            if inner is not None:
                stack.append(inner)
            continue
        parts.append(code.co_code.hex() + repr(code.co_names))
        for const_ in code.co_consts:
            if hasattr(const_, "co_code"):
                stack.append(const_)
            else:
                parts.append(repr(const_))
        for cell in getattr(item, "__closure__", None) or ():
            content = cell.cell_contents
            if callable(content) or hasattr(content, "co_code"):
                stack.append(content)
            else:
                parts.append(repr(content))
    return "|".join(parts)


_DIGEST = [-1, ""]


def table_digest() -> str:
    """A digest of the table's contents: every field of every spec, templates rendered, rules
    by bytecode. Cache keys include it, so a registered op can never collide with code made
    without it (or with a different definition under the same name). Built-in ops are left
    out: they cannot be replaced or removed, and everything in them is symgraph's source,
    which the keys' code fingerprint covers (rendering them cost a fresh process 1-5 ms)."""
    if _DIGEST[0] != _GENERATION[0]:
        digest = hashlib.sha256()
        for spec in OPS.values():
            if spec.name in _BUILTIN and spec is _BUILTIN_SPECS.get(spec.name):
                continue
            n = max(spec.arity, 2)
            names = [f"a{i}" for i in range(n)]
            literals = [*names[:-1], "2.0"]  # exercises literal operands (pow's products)
            for key, value in sorted(vars(spec).items()):
                if key in ("py", "np", "nb", "lanes") and value is not None:
                    text = spec.render(key, names) + "\0" + spec.render(key, literals)
                elif callable(value):
                    text = _callable_identity(value)
                else:
                    text = repr(value)
                digest.update(f"{spec.name}.{key}={text}\0".encode())
        _DIGEST[:] = [_GENERATION[0], digest.hexdigest()[:24]]
    return _DIGEST[1]


_BUILTIN: set[str] = set()
_BUILTIN_SPECS: dict[str, OpSpec] = {}


def seal_builtins() -> None:
    """Called once by `ops` after the built-in table is filled: derive the views."""
    _BUILTIN.update(OPS)
    _BUILTIN_SPECS.update(OPS)
    _derive()


def is_builtin(name: str) -> bool:
    return name in _BUILTIN
