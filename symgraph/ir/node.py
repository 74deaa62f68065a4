"""The expression DAG: immutable, interned nodes made through one constructor, `apply`.

Equal subexpressions are the same object (`a is b` means "same expression"), so common
subexpression elimination is free. Commutative arguments are kept in a canonical order derived
from a stable structural digest (never `hash()` or `id()`), so structure, printing and generated
code are identical in every process.

Construction applies only light rules that keep IEEE meaning (up to the sign of a zero:
``x + 0`` is ``x`` even for ``x = -0.0``): constants fold (with NumPy
semantics, so ``1/0`` folds to ``inf``), ``x+0``, ``x*1``, ``x**1``, ``x**0``, ``--x``, n-ary
``add``/``mul`` flatten (nested ones of up to `FLATTEN_LIMIT` operands), and like terms
collect (``x + x`` is ``2*x``). ``x*0`` and ``x-x`` are
kept: they are ``nan`` when ``x`` is infinite.
"""

from __future__ import annotations

import hashlib
import math
import operator
import os
import threading
import weakref
from collections.abc import Sequence

import numpy as np

from . import ops
from .exact import NAMED, Exact
from .exact import fold as _exact_fold
from .ops import COMPARISONS, OPS

Number = int | float
_ARRAY = np.ndarray


class Node:
    """One expression. Build nodes with `symbol`, `const`, `apply`, operators and functions."""

    __slots__ = ("op", "args", "value", "digest", "__weakref__")

    op: str  # an OPS name, "const" or "symbol"
    args: tuple[Node, ...]
    value: float | str | None  # the number of a const, the name of a symbol
    digest: bytes  # structural digest: stable across processes

    def __init__(self, op: str, args: tuple, value, digest: bytes) -> None:
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "digest", digest)

    def __setattr__(self, name, value):
        raise AttributeError("symgraph nodes are immutable")

    # -- queries ------------------------------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return self.op == "const"

    @property
    def is_symbol(self) -> bool:
        return self.op == "symbol"

    @property
    def name(self) -> str:
        if self.op != "symbol":
            raise AttributeError(f"a {self.op} node has no name")
        return self.value

    def times(self, other) -> Node:
        """``self * other`` keeping both operands whole (see `combine`)."""
        return combine("mul", [self, other])

    def call(self, op: str, *others) -> Node:
        """``x.call("sin")`` is ``sin(x)``; ``c.call("where", a, b)`` is ``where(c, a, b)``."""
        return apply(op, self, *others)

    def __repr__(self) -> str:
        return f"<Node {self.op}>"

    def __bool__(self):
        raise TypeError(
            "the truth value of a symgraph expression is unknown until it is evaluated "
            "(Python's `if`, `and`/`or`, `while` need a number); use symgraph.where(cond, a, b) "
            "or np.where for a branch in the expression, or symgraph.dynamic.freeze to trace "
            "a function that branches on values")

    def __float__(self) -> float:
        if self.op != "const":
            raise TypeError(
                f"cannot convert a {self.op} expression to float: it has no value until it is "
                "evaluated. math.sin(x) and the math module need numbers: use np.sin(x) or "
                "sg.sin(x) (NumPy's functions build expressions); store symbolic values in "
                "arrays of dtype=object, not float arrays")
        return self.value

    def __int__(self) -> int:
        if self.op != "const":
            raise TypeError(f"cannot convert a {self.op} expression to int: it has no value "
                            "until it is evaluated; use np.floor(x) or sg.floor(x) for the "
                            "expression, and numbers for sizes and indices")
        return int(self.value)

    # NumPy's __array_ufunc__ / __array_function__ (np.sin(x) is sin(x)) and the methods its
    # object loops call (x.sin()) are installed by numpy_arrays, which needs this class.

    def __reduce__(self):
        raise TypeError("symgraph nodes are not pickled; send the printed text or the "
                        "generated source instead")

    # -- operators: each is one call of the constructor ----------------------------------------
    # With an array on the right, NotImplemented lets NumPy's reflected operator build the
    # elementwise result (x - w is an array for an array w).
    # The arithmetic ops are built in (sealed): their operators go straight to `_made`, the
    # step of `apply` after its checks.
    def __add__(self, other):
        if other.__class__ is not Node:
            if isinstance(other, _ARRAY):
                return NotImplemented
            other = _as_node(other)
        return _made("add", (self, other))

    def __radd__(self, other): return _made("add", (_as_node(other), self))

    def __sub__(self, other):
        if other.__class__ is not Node:
            if isinstance(other, _ARRAY):
                return NotImplemented
            other = _as_node(other)
        return _made("add", (self, _made("neg", (other,))))

    def __rsub__(self, other): return _made("add", (_as_node(other), _made("neg", (self,))))

    def __mul__(self, other):
        if other.__class__ is not Node:
            if isinstance(other, _ARRAY):
                return NotImplemented
            other = _as_node(other)
        return _made("mul", (self, other))

    def __rmul__(self, other): return _made("mul", (_as_node(other), self))

    def __truediv__(self, other):
        if other.__class__ is not Node:
            if isinstance(other, _ARRAY):
                return NotImplemented
            other = _as_node(other)
        return _made("div", (self, other))

    def __rtruediv__(self, other): return _made("div", (_as_node(other), self))

    def __pow__(self, other):
        if other.__class__ is not Node:
            if isinstance(other, _ARRAY):
                return NotImplemented
            other = _as_node(other)
        return _made("pow", (self, other))

    def __rpow__(self, other): return _made("pow", (_as_node(other), self))
    def __neg__(self): return _made("neg", (self,))
    def __pos__(self): return self
    def __abs__(self): return apply("abs", self)

    def __lt__(self, other):
        return apply("lt", self, other) if not isinstance(other, _ARRAY) else NotImplemented

    def __le__(self, other):
        return apply("le", self, other) if not isinstance(other, _ARRAY) else NotImplemented

    def __gt__(self, other):
        return apply("gt", self, other) if not isinstance(other, _ARRAY) else NotImplemented

    def __ge__(self, other):
        return apply("ge", self, other) if not isinstance(other, _ARRAY) else NotImplemented

    # == stays identity: interned nodes make it structural equality, and dicts keep working.
    __eq__ = object.__eq__
    __hash__ = object.__hash__


class _TableRef(weakref.ref):
    """A weak reference that knows its table and key, so a collected node removes its entry."""

    __slots__ = ("key", "table")


try:  # the C helper of WeakValueDictionary: delete `key` if its value is a dead reference
    from _weakref import _remove_dead_weakref
except ImportError:  # another Python: the same under the lock
    def _remove_dead_weakref(table: dict, key) -> None:
        with _INTERN_LOCK:
            ref = table.get(key)
            if ref is not None and ref() is None:
                del table[key]


def _forget(ref: _TableRef, _remove=_remove_dead_weakref) -> None:
    # Atomic, so no lock: a thread that has just put a new node under this key keeps it (its
    # reference is alive), and a dead reference is what `_make` replaces anyway. (`_remove` is
    # bound here: at exit, nodes still alive die after the module's globals are cleared.)
    _remove(ref.table, ref.key)


# The intern tables, one per op: arguments (a leaf: its value) -> weak reference to the one
# node with that structure. Weak, so expressions nobody holds are freed; plain dicts of refs
# (not WeakValueDictionary), keyed by the node's own argument tuple, because interning is the
# innermost step of every construction.
_TABLES: dict[str, dict] = {}
# Making a node is check-then-insert: threads building expressions at once must not both make
# "the" node of one structure (two symbols named x). Lookups of existing nodes take no lock;
# reentrant, since a weak reference's callback (`_forget`) may run inside a locked section.
_INTERN_LOCK = threading.RLock()


def _unlock_in_child() -> None:  # a fork from another thread may have copied the lock held
    global _INTERN_LOCK
    _INTERN_LOCK = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_unlock_in_child)
_HEADERS: dict[str, bytes] = {}  # op -> the start of an operation node's digest input
_DIGEST_OF = operator.attrgetter("digest")
_new_node = object.__new__
_set_op, _set_args, _set_value, _set_digest = (
    Node.__dict__[slot].__set__ for slot in ("op", "args", "value", "digest"))
# blake2b with a 16-byte digest, its parameters set once: copying it is ~3x cheaper than
# making a new hasher (the same digests).
_NEW_HASH = hashlib.blake2b(digest_size=16).copy


def _intern(op: str, args: tuple, value) -> Node:
    table = _TABLES.get(op)
    if table is None:
        table = _TABLES.setdefault(op, {})
    # A leaf's key is its value: hex keeps -0.0 and nan apart, a symbol's is its name.
    key = args if value is None else value if op != "const" else value.hex() if (
        value.__class__ is float) else value.key()  # an Exact: 1/3 is not the float 0.333...
    ref = table.get(key)
    if ref is not None:
        node = ref()
        if node is not None:
            return node
    with _INTERN_LOCK:
        return _make(op, args, value, table, key)


def _op_node(op: str, args: tuple) -> Node:
    """`_intern` of an operation node (no value): its table's entry when it exists."""
    table = _TABLES.get(op)
    if table is None:
        return _intern(op, args, None)
    ref = table.get(args)
    if ref is not None:
        node = ref()
        if node is not None:
            return node
    with _INTERN_LOCK:
        return _make(op, args, None, table, args)


def _make(op: str, args: tuple, value, table: dict, key) -> Node:
    """The node of (op, args, value), made and interned unless another thread just did."""
    ref = table.get(key)
    if ref is not None:
        node = ref()
        if node is not None:
            return node
    # The digest hashes op, value and the arguments' digests: structural, the same everywhere.
    hasher = _NEW_HASH()
    if value is None:
        header = _HEADERS.get(op)
        if header is None:
            header = _HEADERS[op] = op.encode() + b"\0None\0"
        hasher.update(header)
        if len(args) == 2:
            hasher.update(args[0].digest)
            hasher.update(args[1].digest)
        else:
            hasher.update(b"".join(map(_DIGEST_OF, args)))
    else:
        hasher.update(op.encode() + b"\0" + str(key).encode() + b"\0")
    node = _new_node(Node)  # the slots are set directly: no __init__ frame per node
    _set_op(node, op)
    _set_args(node, args)
    _set_value(node, value)
    _set_digest(node, hasher.digest())
    ref = _TableRef(node, _forget)
    ref.key, ref.table = key, table
    table[key] = ref
    return node


ops.CONSTANT[:] = [lambda value: const(value)]  # the op table's rules build constants with it


def interned_count() -> int:
    """Nodes alive in the intern tables (tests use it to check that expressions are freed)."""
    return sum(1 for table in _TABLES.values() for ref in list(table.values())
               if ref() is not None)


def const(value: Number) -> Node:
    """A constant; every number is a float64, so huge literals become ``inf``, never big ints.

    ``math.pi`` and ``math.e`` are the exact constants pi and e (`exact`), as in parsed text."""
    if value.__class__ is float or value.__class__ is int:
        common = _COMMON.get(value)  # no zero is there: -0.0 == 0.0 would find the wrong one
        if common is not None:
            return common
    if value.__class__ is Exact:
        return _intern("const", (), value)
    if isinstance(value, (bool, np.bool_)):
        value = float(value)
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        number = math.inf if value > 0 else -math.inf
    named = NAMED.get(number)  # math.pi is pi, as "pi" in text is
    if named is not None:
        return _intern("const", (), named)
    return _intern("const", (), number)


# The constants that literals and the op table's rules use most (small integers, halves), each
# kept alive for good: `const` of them is one dict lookup. Keyed by value, so 2 and 2.0 find
# the same node; never a zero (the two zeros are equal keys) nor a nan (equal to nothing).
_COMMON: dict[float, Node] = {}
_COMMON.update((v, const(v)) for v in [float(k) for k in range(-16, 17) if k]
               + [0.5, -0.5, 0.25, -0.25, 1.5, -1.5])


def symbol(name: str) -> Node:
    if not isinstance(name, str) or not name:
        raise ValueError(f"a symbol name must be a non-empty string, got {name!r}")
    return _intern("symbol", (), name)


def symbols(names: str) -> Node | tuple[Node, ...]:
    """``symbols("x y")`` or ``symbols("x, y")`` gives a tuple of symbols; one name gives the
    symbol itself, as in SymPy (``symbols("x,")`` a 1-tuple)."""
    if not isinstance(names, str):
        raise TypeError(f"symbols takes a string of names, got {names!r}")
    found = tuple(symbol(n) for n in names.replace(",", " ").split())
    if len(found) == 1 and "," not in names:
        return found[0]
    return found


def _as_node(value) -> Node:
    if value.__class__ is float or value.__class__ is int:
        return const(value)
    if isinstance(value, Node):
        return value
    if isinstance(value, (int, float, np.integer, np.floating, bool, np.bool_)):
        return const(value)
    raise TypeError(f"cannot use {type(value).__name__} {value!r} in a symgraph expression")


# -- construction rules ----------------------------------------------------------------------
# Each rule takes the argument nodes and returns a finished Node, or a tuple of (new) arguments.

_ADD_RANK = {"pow": 0, "mul": 1, "symbol": 2, "const": 9}
_MUL_RANK = {"const": 0, "symbol": 1, "pow": 2}


def _order_key(rank: dict[str, int]):
    # Readable canonical order: by kind, symbols by name, everything else by digest.
    def key(node: Node):
        r = rank.get(node.op, 3)
        return (r, node.value if node.op == "symbol" else "", node.digest)

    return key


_ADD_KEY, _MUL_KEY = _order_key(_ADD_RANK), _order_key(_MUL_RANK)


def _in_order(a: Node, b: Node, rank: dict[str, int]) -> tuple[Node, Node]:
    """(a, b) sorted by the key of `rank` (`_order_key`), without building the keys."""
    ra, rb = rank.get(a.op, 3), rank.get(b.op, 3)
    if ra != rb:
        return (a, b) if ra < rb else (b, a)
    if a.op == "symbol" and b.op == "symbol" and a.value != b.value:
        return (a, b) if a.value < b.value else (b, a)
    if a.op == "symbol" or b.op == "symbol":  # a name against "" (or the same name)
        ka, kb = (a.value if a.op == "symbol" else "", a.digest), (
            b.value if b.op == "symbol" else "", b.digest)
        return (a, b) if ka <= kb else (b, a)
    return (a, b) if a.digest <= b.digest else (b, a)


# A nested sum (product) is flattened into its parent only up to this many operands. Wider
# ones stay one operand: flattening copies them, which recomputes a shared partial sum at every
# use and makes loops like ``y = y + h*f(y)`` quadratic. Small sums stay canonical.
FLATTEN_LIMIT = 8


def _flatten(op: str, args: Sequence[Node]) -> list[Node]:
    flat: list[Node] = []
    for arg in args:
        if arg.op == op and len(arg.args) <= FLATTEN_LIMIT:
            flat.extend(arg.args)
        else:
            flat.append(arg)
    return flat


def _fold(op: str, numbers: list[float]) -> float:
    if op == "neg" and numbers[0].__class__ is float:  # float64's negation, as NumPy's
        return -numbers[0]
    if len(numbers) == 2 and numbers[0].__class__ is float and numbers[1].__class__ is float:
        if op == "add":  # plain floats: nothing exact to keep (`exact.fold` says None)
            return numbers[0] + numbers[1]
        if op == "mul":
            return numbers[0] * numbers[1]
    exact = _exact_fold(op, numbers)  # 1/3, sqrt(2*pi): kept exact, valued correctly rounded
    if exact is not None:
        return exact
    if op == "add" or op == "mul":  # Python floats round and overflow as float64 does
        total = numbers[0]
        for number in numbers[1:]:
            total = total + number if op == "add" else total * number
        return total
    with np.errstate(all="ignore"):
        return float(OPS[op].evaluate(*[np.float64(v) for v in numbers]))


def _split_coefficient(term: Node) -> tuple[float, Node]:
    """``3*x*y -> (3, x*y)``, ``-x -> (-1, x)``, ``x -> (1, x)``."""
    if term.op == "neg":
        coefficient, rest = _split_coefficient(term.args[0]) if term.args[0].op == "mul" else (
            1.0, term.args[0])
        return _fold("neg", [coefficient]), rest
    if term.op == "mul" and term.args[0].op == "const":
        rest = term.args[1:]
        return term.args[0].value, rest[0] if len(rest) == 1 else _intern("mul", rest, None)
    return 1.0, term


def _rule_add(args):
    if len(args) == 2:  # the common case, in derivatives above all: two unrelated terms
        a, b = args
        if a is not b:
            if _lone_term(a) and _lone_term(b):
                return _op_node("add", _in_order(a, b, _ADD_RANK))
            # t + c, a term that is no sum: nothing to collect, the constant goes last
            if b.op == "const" and a.op != "const" and a.op != "add":
                return a if b.value == 0.0 else args
            if a.op == "const" and b.op != "const" and b.op != "add":
                return b if a.value == 0.0 else (b, a)
            # two terms that are no sums or constants, of different rests: nothing to collect
            ra, rb = _plain_rest(a), _plain_rest(b)
            if ra is not None and rb is not None and ra is not rb and a.op != "const" \
                    and b.op != "const" and a.op != "add" and b.op != "add":
                return _op_node("add", _in_order(a, b, _ADD_RANK))
    terms = _flatten("add", args)
    numbers = [t.value for t in terms if t.op == "const"]
    terms = [t for t in terms if t.op != "const"]
    groups: dict[Node, list] = {}  # rest -> [coefficient sum, original terms]
    for term in terms:
        coefficient, rest = _split_coefficient(term)
        group = groups.setdefault(rest, [0.0, []])
        group[0] = _fold("add", [group[0], coefficient])
        group[1].append(term)
    if len(groups) < len(terms):  # like terms to collect
        terms = []
        for rest, (coefficient, originals) in groups.items():
            if len(originals) == 1:
                terms.extend(originals)
            elif coefficient == 0.0:  # x - x stays (nan for infinite x), as two terms however
                terms.extend(originals if len(originals) == 2 else (rest, apply("neg", rest)))
            else:
                terms.append(apply("mul", coefficient, rest))
    if numbers:
        total = _fold("add", numbers) if len(numbers) > 1 else numbers[0]
        if total != 0.0 or not terms:
            terms.append(const(total))
    if not terms:
        return const(0.0)
    return terms[0] if len(terms) == 1 else tuple(sorted(terms, key=_ADD_KEY))


def _plain_rest(term: Node) -> Node | None:
    """`_split_coefficient(term)[1]` where it is an existing node (else None): the term
    without its constant factor or negation."""
    op = term.op
    if op == "neg":
        inner = term.args[0]
        return None if inner.op == "mul" else inner
    if op == "mul" and term.args[0].op == "const":
        return term.args[1] if len(term.args) == 2 else None
    return term


def _lone_term(t: Node) -> bool:
    # A term with no coefficient to collect and nothing to flatten or fold.
    op = t.op
    return op != "add" and op != "const" and op != "neg" and not (
        op == "mul" and t.args[0].op == "const")


def _rule_mul(args):
    if len(args) == 2:
        a, b = args
        if a.op != "mul" and b.op != "mul":
            if a.op != "const":
                if b.op != "const":
                    return _op_node("mul", _in_order(a, b, _MUL_RANK))
                a, b = b, a
            elif b.op == "const":
                a = None
            if a is not None:  # c * t: the coefficient goes first
                c = a.value
                return b if c == 1.0 else _made("neg", (b,)) if c == -1.0 else (a, b)
    factors = _flatten("mul", args)
    numbers = [f.value for f in factors if f.op == "const"]
    factors = [f for f in factors if f.op != "const"]
    coefficient = 1.0
    if numbers:
        coefficient = _fold("mul", numbers) if len(numbers) > 1 else numbers[0]
    if not factors:
        return const(coefficient)
    if coefficient == -1.0:
        return apply("neg", factors[0] if len(factors) == 1 else apply("mul", *factors))
    if coefficient != 1.0:
        factors.append(const(coefficient))
    return factors[0] if len(factors) == 1 else tuple(sorted(factors, key=_MUL_KEY))


def _rule_neg(args):
    (x,) = args
    if x.op == "neg":
        return x.args[0]
    if x.op == "mul" and x.args[0].op == "const":
        return apply("mul", _fold("neg", [x.args[0].value]), *x.args[1:])
    return args


def _rule_div(args):
    a, b = args
    if b.op == "const" and b.value == 1.0:
        return a
    return args


def _rule_pow(args):
    base, exponent = args
    if exponent.op == "const" and exponent.value == 1.0:
        return base
    if exponent.op == "const" and exponent.value == 0.0:
        return const(1.0)  # NumPy: nan**0 == 1
    if base.op == "const" and base.value == 1.0:
        return const(1.0)  # NumPy: 1**nan == 1
    return args


def _rule_where(args):
    condition, a, b = args
    if condition.op == "const":
        return a if condition.value != 0.0 or math.isnan(condition.value) else b
    if a is b:
        return a
    if condition.op in COMPARISONS and a.op == b.op == "const" and (a.value, b.value) == (1, 0):
        return condition
    return args


def _rule_same_arguments(op: str):
    # min(a, a) = max(a, a) = a and a < a = a > a = 0 hold for every a, nan included.
    def rule(args):
        a, b = args
        if a is b:
            return a if op in ("min", "max") else const(0.0)
        return args

    return rule


_RULES = {"add": _rule_add, "mul": _rule_mul, "neg": _rule_neg, "div": _rule_div,
          "pow": _rule_pow, "where": _rule_where,
          **{op: _rule_same_arguments(op) for op in ("min", "max", "lt", "gt")}}


def apply(op: str, *args) -> Node:
    """The one constructor of operation nodes: ``apply("sin", x)``, ``apply("add", x, y, 1)``."""
    spec = OPS.get(op)
    if spec is None:
        raise ValueError(f"unknown operation {op!r}")
    nodes = args
    for a in args:
        if a.__class__ is not Node:
            nodes = tuple(_as_node(a) for a in args)
            break
    if spec.arity >= 0 and len(nodes) != spec.arity:
        raise TypeError(f"{op}() takes {spec.arity} argument(s), got {len(nodes)}")
    if spec.arity < 0 and not nodes:
        raise TypeError(f"{op}() takes at least one argument")
    return _made(op, nodes)


def _made(op: str, nodes: tuple) -> Node:
    """`apply` after its checks: `nodes` are Nodes, as many as `op` takes."""
    rule = _RULES.get(op)
    if rule is not None:
        result = rule(nodes)
        if result.__class__ is Node:
            return result
        nodes = result
    for n in nodes:
        if n.op != "const":
            return _op_node(op, nodes)
    try:
        return const(_fold(op, [n.value for n in nodes]))
    except NotImplementedError:  # a function without numerics (undefined f(2.0)): a node
        return _intern(op, nodes, None)


def _constants_fold(op: str, nodes: list[Node]) -> bool:
    # c1 * (c2 * t) is better as (c1*c2) * t: flattening copies nothing but the constant.
    return len(nodes) == 2 and any(n.op == "const" for n in nodes) and all(
        n.op != op or (len(n.args) == 2 and any(a.op == "const" for a in n.args)) for n in nodes)


def combine(op: str, operands: Sequence) -> Node:
    """``add``/``mul`` over exactly `operands`, without flattening nested sums or products.

    `apply` flattens, which is canonical but copies a nested node's operands into the new one:
    when that nested node is shared (an adjoint reused by every argument of a node), flattening
    recomputes it at every use. The differentiator combines through here so that a shared
    adjoint stays one operand, and derivative programs stay within a small factor of f.
    """
    if len(operands) == 2:  # the differentiator's `adjoint * partial`: two nodes
        a, b = operands
        if a.__class__ is Node and b.__class__ is Node:
            if a.op != op and b.op != op:  # nothing nested: the ordinary rules
                return _made(op, (a, b))
            if a.op != "const" and b.op != "const":  # kept whole, in canonical order
                return _op_node(op, _in_order(a, b, _ADD_RANK if op == "add" else _MUL_RANK))
    nodes = [o if o.__class__ is Node else _as_node(o) for o in operands]
    for n in nodes:
        if n.op == op:
            break
    else:  # no nested sum (product): nothing worth keeping apart, the ordinary rules apply
        return apply(op, *nodes)
    if _constants_fold(op, nodes):
        return apply(op, *nodes)
    identity = 0.0 if op == "add" else 1.0
    nodes = [n for n in nodes if not (n.op == "const" and n.value == identity)]
    if op == "mul" and any(n.op == "const" and n.value == -1.0 for n in nodes):
        rest = [n for n in nodes if not (n.op == "const" and n.value == -1.0)]
        if len(rest) == len(nodes) - 1:
            return apply("neg", combine("mul", rest))
    if len(nodes) == 1:
        return nodes[0]
    return _intern(op, tuple(sorted(nodes, key=_ADD_KEY if op == "add" else _MUL_KEY)), None)


__all__ = ["FLATTEN_LIMIT", "Node", "apply", "combine", "const", "interned_count", "symbol",
           "symbols"]
