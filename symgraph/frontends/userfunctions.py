"""User-defined functions: one declaration gives an op of the table (`define_function`).

A declared function parses in text, prints, converts to and from SymPy (a SymPy ``Function``
class of its name maps to it), differentiates to any order (its partials are symgraph
expressions, which may call it or any other function) and compiles in every backend: the
generated modules and the tape interpreter call its implementations through
`implementation`, by name, and the op's templates carry the implementations' digest, so an
edited implementation is new code (new cache keys, a new module file) and recompiles.

Undefined functions (`undefined_function`, or `define_function` without numerics) have no
numbers: they differentiate and print, and compiling one raises `UndefinedFunctionError`
naming it. The partial of an undefined ``f`` in its i-th argument (counted from 1) is the
undefined function ``f_i``, and of ``f_i`` in its j-th argument ``f_ij`` (indices sorted:
mixed partials commute), so ``diff(f(g(x)), x)`` prints ``f_1(g(x)) * g_1(x)``; SymPy gets
``Subs(Derivative(f(_0), _0), _0, g(x))``, SymPy's own form, which `from_sympy` reads back.

Generated code calls a function ``name`` as ``_uf_name(...)``; modules bind that name with
``_uf_name = _uf_implementation("name", kind, digest)`` (`implementation`, public and stable:
a module loaded in another process finds the function once the same declaration ran there).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir import opspec
from ..ir.node import Node, apply
from ..ir.ops import OPS

GENERATED_PREFIX = "_uf_"
_IMPORT = "from symgraph.frontends.userfunctions import implementation as _uf_implementation"


class UndefinedFunctionError(NotImplementedError):
    """A function without numeric implementation was asked for numbers."""


@dataclass(frozen=True, eq=False)
class Function:
    """A declared function; calling it builds a node: ``f(x, 2.0)``."""

    name: str
    arguments: tuple[str, ...]
    python: Callable[..., float] | None
    numpy: Callable[..., Any] | None
    numba: Any
    partials: tuple[Any, ...] | None  # None: undefined (partials are f_1, f_2, ...)
    digest: str
    base: str = ""  # for the derivative f_12 of an undefined f: "f" and (1, 2)
    indices: tuple[int, ...] = ()

    @property
    def arity(self) -> int:
        return len(self.arguments)

    @property
    def defined(self) -> bool:
        return self.python is not None or self.numba is not None

    def __call__(self, *args: Any) -> Node:
        return apply(self.name, *args)

    def __repr__(self) -> str:
        kind = "defined" if self.defined else "undefined"
        return f"<{kind} function {self.name}({', '.join(self.arguments)})>"


FUNCTIONS: dict[str, Function] = {}


def _source(f: Any) -> str:
    """The text an implementation is known by: its source, else its bytecode's identity."""
    if f is None:
        return ""
    f = getattr(f, "py_func", f)  # a Numba dispatcher: the Python function it compiles
    try:
        return inspect.getsource(f)
    except (OSError, TypeError):
        return opspec._callable_identity(f)


def _argument_names(arguments: Sequence[str] | int) -> tuple[str, ...]:
    if isinstance(arguments, int):
        if arguments < 1:
            raise ValueError(f"a function needs at least one argument, got arity {arguments}")
        return ("x",) if arguments == 1 else tuple(f"x{i}" for i in range(arguments))
    names = tuple(arguments)
    if not names or not all(isinstance(a, str) and a.isidentifier() for a in names):
        raise ValueError(f"arguments must be identifiers, got {names!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"argument names repeat: {names!r}")
    return names


def define_function(name: str, arguments: Sequence[str] | int = 1, *,
                    python: Callable[..., float] | None = None,
                    numba: Any = None,
                    numpy: Callable[..., Any] | None = None,
                    partials: Sequence[Any] | None = None,
                    domain: Sequence[tuple[float, float]] | None = None,
                    latex: str | None = None,
                    replace: bool = False) -> Function:
    """Declare function `name` of `arguments` (names, or how many: 1 is ``x``) once.

    * `python`: a scalar function of floats; `numba`: an ``@njit`` function (Numba kernels and
      the tape call it; it serves as `python` too when that is not given); `numpy`: the
      vectorised form for the Python backend's batches (default: `np.vectorize` of `python`).
      Give none of them for an undefined function (see the module docstring).
    * `partials`: one entry per argument, each a text expression over the argument names
      (``"-f(x) / x"``; it may call `name` itself or any declared function, so derivatives of
      every order exist), a callable taking the argument nodes and returning a node or number,
      or None for a zero partial. Required for a defined function.
    * `domain`: one (low, high) per argument, where tests sample; `latex`: a template over
      ``{0}``, ``{1}``... (default ``\\operatorname{name}(...)``).
    * `replace`: redefine a function declared before (else that is a ValueError).
    """
    names = _argument_names(arguments)
    defined = python is not None or numba is not None
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"a function name must be an identifier not starting with '_', got "
                         f"{name!r}")
    if name in OPS and name not in FUNCTIONS:
        raise ValueError(f"{name!r} is an op of symgraph's table; choose another name")
    known = FUNCTIONS.get(name)
    if known is not None and known.digest == _digest(name, names, python, numba, numpy,
                                                     partials if defined else None):
        return known  # the same declaration again (a module imported twice): nothing to do
    if name in FUNCTIONS:
        if not replace:
            raise ValueError(f"function {name!r} is declared; pass replace=True to redefine it")
        remove_function(name)
    if numpy is not None and python is None and numba is None:
        raise ValueError(f"{name}: a numpy implementation needs a python or numba one too")
    if defined:
        if partials is None or len(partials) != len(names):
            raise ValueError(f"{name}: give partials, one per argument ({len(names)}), as text, "
                             "callables or None")
        for k, p in enumerate(partials):
            if p is not None and not (isinstance(p, (str, int, float, Node)) or callable(p)):
                raise TypeError(f"{name}: partial {k} must be text, a callable or None, not "
                                f"{type(p).__name__}")
    elif partials is not None:
        raise ValueError(f"{name}: an undefined function's partials are f_1, f_2...; give an "
                         "implementation with partials, or neither")
    return _declare(name, names, python, numba, numpy,
                    tuple(partials) if defined else None, domain, latex)


def undefined_function(name: str, arguments: Sequence[str] | int = 1) -> Function:
    """Declare `name` as a function without numerics (returns it if declared so already)."""
    known = FUNCTIONS.get(name)
    if known is not None and not known.defined and known.arity == len(_argument_names(arguments)):
        return known
    return define_function(name, arguments)


def _digest(name, names, python, numba, numpy_, partials) -> str:
    """The declaration's identity: its implementations' and partials' sources."""
    return hashlib.sha256("\0".join(
        [name, repr(names), _source(python), _source(numba), _source(numpy_),
         repr([p if isinstance(p, (str, int, float)) or p is None else _source(p)
               for p in partials or ()])]).encode()).hexdigest()[:16]


def _declare(name, names, python, numba, numpy_, partials, domain, latex, base="",
             indices=()) -> Function:
    digest = _digest(name, names, python, numba, numpy_, partials)
    scalar = python if python is not None else numba
    vector = numpy_ if numpy_ is not None else (
        np.vectorize(scalar, otypes=[float]) if scalar is not None else None)
    record = Function(name, names, scalar, vector, numba, partials, digest, base, indices)
    n = len(names)
    call = GENERATED_PREFIX + name
    args = ", ".join(f"{{{i}}}" for i in range(n))
    preludes = (_IMPORT, f'{call} = _uf_implementation("{name}", "python", "{digest}")',
                f'{call}_np = _uf_implementation("{name}", "numpy", "{digest}")')
    nb_preludes = (_IMPORT, f'{call} = _uf_implementation("{name}", "numba", "{digest}")')
    if python is None and numba is None:  # nothing to import: compiling refuses it first
        preludes = nb_preludes = ()
    FUNCTIONS[name] = record
    try:
        opspec.register(opspec.OpSpec(
            name=name, arity=n, evaluate=_evaluator(record), partials=_partials_rule(record),
            py=f"{call}({args})", np=f"{call}_np({args})", nb=f"{call}({args})",
            latex=latex or _latex(record), sympy=_sympy_rule(record),
            domain=tuple(tuple(d) for d in domain) if domain else (),
            np_prelude=preludes, nb_prelude=nb_preludes, cost=8, title=name,
            smooth=True))
    except Exception:
        del FUNCTIONS[name]
        raise
    return record


def remove_function(name: str) -> None:
    """Forget a declared function (and the derivatives of an undefined one)."""
    if name not in FUNCTIONS:
        raise ValueError(f"no declared function named {name!r}")
    for other in [f.name for f in FUNCTIONS.values() if f.base == name] + [name]:
        FUNCTIONS.pop(other, None)
        if other in OPS:
            opspec.unregister(other)


def user_function(name: str) -> Function | None:
    """The declared function `name`, or None."""
    return FUNCTIONS.get(name)


def implementation(name: str, kind: str, digest: str | None = None) -> Any:
    """The implementation of declared function `name`: `kind` "python", "numpy" or "numba".
    Generated modules call this to bind ``_uf_name``; `digest` (the declaration's, written
    into the module) must match, so a module never runs an edited function's old code."""
    record = FUNCTIONS.get(name)
    if record is None:
        raise LookupError(f"generated code calls function {name!r}, which is not declared in "
                          "this process: run its symgraph.define_function first")
    if digest is not None and digest != record.digest:
        raise LookupError(f"generated code was made for another definition of {name!r} "
                          f"(digest {digest}, now {record.digest}); compile again")
    if not record.defined:
        raise UndefinedFunctionError(_undefined_message(name))
    if kind == "python":
        return record.python
    if kind == "numpy":
        return record.numpy
    if kind == "numba":
        return numba_implementation(name)
    raise ValueError(f"kind must be 'python', 'numpy' or 'numba', not {kind!r}")


_JITTED: dict[str, Any] = {}


def numba_implementation(name: str) -> Any:
    """The Numba-callable implementation of `name`: its `numba` one, else its `python` one
    compiled by ``numba.njit`` (a clear error when that cannot compile)."""
    record = FUNCTIONS.get(name)
    if record is None or not record.defined:
        raise UndefinedFunctionError(_undefined_message(name))
    if record.numba is not None:
        return record.numba
    key = f"{name}:{record.digest}"
    if key not in _JITTED:
        from numba import njit

        _JITTED[key] = njit(error_model="numpy")(record.python)
    return _JITTED[key]


def _undefined_message(name: str) -> str:
    return (f"function {name!r} is undefined (declared without numerics): it can be "
            "differentiated and printed, not computed; declare it with "
            "symgraph.define_function(..., python=... or numba=..., partials=...)")


def require_numerics(op_names: Sequence[str]) -> None:
    """Raise `UndefinedFunctionError` naming the first undefined function in `op_names`."""
    for op in op_names:
        record = FUNCTIONS.get(op)
        if record is not None and not record.defined:
            raise UndefinedFunctionError(f"cannot compile: {_undefined_message(op)}")


# -- the op's rules ------------------------------------------------------------------------


def _evaluator(record: Function) -> Callable[..., Any]:
    if not record.defined:
        def undefined(*args: Any) -> Any:
            raise UndefinedFunctionError(_undefined_message(record.name))

        undefined.no_numbers = True  # the tape leaves such ops out of its instruction set
        return undefined

    def evaluate(*args: Any) -> Any:
        with np.errstate(all="ignore"):
            return record.numpy(*args)

    return evaluate


def _partials_rule(record: Function) -> Callable[[tuple, Any], tuple]:
    if not record.defined:
        def undefined_partials(args: tuple, out: Any) -> tuple:
            return tuple(_derivative_function(record, i + 1)(*args) for i in range(len(args)))

        return undefined_partials

    def partials(args: tuple, out: Any) -> tuple:
        return tuple(_partial(record, k, entry, args) for k, entry in enumerate(record.partials))

    return partials


def _partial(record: Function, k: int, entry: Any, args: tuple) -> Any:
    if entry is None or isinstance(entry, (int, float)):
        return entry
    if isinstance(entry, str):
        from .parser import parse  # the parser reads the table: a call of the op itself too

        return parse(entry, dict(zip(record.arguments, args)))
    if isinstance(entry, Node):
        raise TypeError(f"{record.name}: partial {k} is a node; give it as text over "
                        f"{record.arguments} or as a callable of the argument nodes")
    result = entry(*args)
    if not isinstance(result, (Node, int, float)):
        raise TypeError(f"{record.name}: partial {k} returned {type(result).__name__}, not a "
                        "node or number")
    return result


def _derivative_function(record: Function, index: int) -> Function:
    """The undefined partial of undefined `record` in argument `index` (from 1)."""
    base = record.base or record.name
    indices = tuple(sorted((*record.indices, index)))
    name = f"{base}_{''.join(map(str, indices))}"
    known = FUNCTIONS.get(name)
    if known is not None:
        return known
    return _declare(name, record.arguments, None, None, None, None, None, None, base, indices)


def _latex(record: Function) -> str:
    args = r"\left(" + ", ".join(f"{{{i}}}" for i in range(record.arity)) + r"\right)"
    if record.base and record.arity == 1:
        k = len(record.indices)
        mark = "'" * k if k <= 3 else f"^{{({k})}}"
        return f"{_latex_name(record.base)}{mark}{args}"
    if record.base:
        return (r"\partial_{{" + " ".join(map(str, record.indices)) + "}} "
                + _latex_name(record.base) + args)
    return _latex_name(record.name) + args


def _latex_name(name: str) -> str:
    return name if len(name) == 1 else r"\operatorname{{" + name.replace("_", r"\_") + "}}"


def _sympy_rule(record: Function) -> Callable[..., Any]:
    def to_sympy(sp: Any, *args: Any) -> Any:
        if not record.base:
            return sp.Function(record.name)(*args)
        dummies = [sp.Dummy(f"_{i}") for i in range(record.arity)]
        applied = sp.Function(record.base)(*dummies)
        derivative = applied.diff(*[dummies[i - 1] for i in record.indices])
        return sp.Subs(derivative, dummies, args).doit() if all(
            isinstance(a, sp.Symbol) for a in args) and len(set(args)) == len(args) else \
            sp.Subs(derivative, dummies, args)

    return to_sympy


def derivative_of(base: str, indices: Sequence[int]) -> Function:
    """The undefined function that is the partial of undefined `base` in arguments
    `indices` (from 1): what `from_sympy` makes of SymPy's ``Derivative(f(x, y), x, y)``."""
    record = FUNCTIONS.get(base)
    if record is None or record.defined:
        raise ValueError(f"{base!r} is no undefined function")
    for index in indices:
        record = _derivative_function(record, index)
    return record


__all__ = ["FUNCTIONS", "Function", "UndefinedFunctionError", "define_function",
           "derivative_of", "implementation", "numba_implementation", "remove_function",
           "require_numerics", "undefined_function", "user_function"]
