"""The nodes of the expression DAG and their interning: one node per structure.

`Node` is immutable; `const` and `symbol` make leaves, and operation nodes come from `node`'s
constructor, `apply` (`rules` holds its construction rules). A structure's node is found in its
op's intern table, so equal subexpressions are the same object, and its digest (blake2b of op,
value and the arguments' digests) is stable across processes: canonical order never depends on
`hash()` or `id()`. The operators (``x + y``) are installed on `Node` by `node`.
"""

from __future__ import annotations

import hashlib
import math
import operator
import os
import threading
import weakref

import numpy as np

from . import ops
from .exact import NAMED, Exact

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

    # The operators (x + y, x < y, ...) and `times`/`call` are installed by `node`, which
    # holds the constructor they call.
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
# Threads building expressions at once must not both make "the" node of one structure (two
# symbols named x): a new node goes in with `dict.setdefault`, atomic, so the first one in is
# the node and the other thread takes it (`_make`); no lock. This one is for Pythons without
# the C helper below; reentrant, since a weak reference's callback may run inside it.
_INTERN_LOCK = threading.RLock()


def _unlock_in_child() -> None:  # a fork from another thread may have copied the lock held
    global _INTERN_LOCK
    _INTERN_LOCK = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_unlock_in_child)
_HEADERS: dict[str, object] = {}  # op -> a hasher that has taken an operation node's header
_DIGEST_OF = operator.attrgetter("digest")
# blake2b with a 16-byte digest, its parameters set once: copying it is ~3x cheaper than
# making a new hasher (the same digests).
_NEW_HASH = hashlib.blake2b(digest_size=16).copy


class _Fresh(Node):
    """A node being made: `Node`'s layout without its `__setattr__` guard, so its slots are
    set by plain (specialised) attribute stores; `_make` then makes it a `Node`. ~190 ns a
    node less than calling the slots' setters (0.28 against 0.47 us, Zen 3)."""

    __slots__ = ()
    __setattr__ = object.__setattr__


_new_fresh = object.__new__


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
    return _make(op, args, None, table, args)


def _make(op: str, args: tuple, value, table: dict, key) -> Node:
    """The node of (op, args, value), made and interned unless another thread just did."""
    # The digest hashes op, value and the arguments' digests: structural, the same everywhere.
    if value is None:
        started = _HEADERS.get(op)  # a hasher that has taken the op's header already
        if started is None:
            started = _HEADERS[op] = _NEW_HASH()
            started.update(op.encode() + b"\0None\0")
        hasher = started.copy()
        if len(args) == 2:
            hasher.update(args[0].digest + args[1].digest)
        else:
            hasher.update(b"".join(map(_DIGEST_OF, args)))
    else:
        hasher = _NEW_HASH()
        hasher.update(op.encode() + b"\0" + str(key).encode() + b"\0")
    node = _new_fresh(_Fresh)  # no __init__ frame per node
    node.op = op
    node.args = args
    node.value = value
    node.digest = hasher.digest()
    node.__class__ = Node
    ref = _TableRef(node, _forget)
    ref.key = key
    ref.table = table
    while True:  # no lock: `setdefault` and the removal of a dead reference are each atomic
        found = table.setdefault(key, ref)
        if found is ref:
            return node
        other = found()
        if other is not None:
            return other  # another thread's, made meanwhile (ours is dropped, its entry kept)
        _remove_dead_weakref(table, key)  # a collected node's entry: removed, then ours


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
        common = _COMMON.get(value)  # (`const`'s first step: the operators' 1.0 and 2.0)
        return common if common is not None else const(value)
    if isinstance(value, Node):
        return value
    if isinstance(value, (int, float, np.integer, np.floating, bool, np.bool_)):
        return const(value)
    raise TypeError(f"cannot use {type(value).__name__} {value!r} in a symgraph expression")
