"""The special functions of `symgraph.ir.special`, compiled by Numba: what generated Numba
modules and the tape interpreter call (``_sf_gamma(x)``: the op table's ``nb`` templates), and
the user functions' Numba implementations (`symgraph.ir.userfunctions`) by their generated
names (``_uf_<name>``).

`symgraph.ir.special` is plain Python on floats; each of its functions is compiled here as it
is, over a copy of its module's namespace in which its helpers are their compiled selves (so a
compiled function calls compiled ones): the same source gives the Python backend's numbers and
Numba's, through Numba's public API alone. A name in a copy means what it means in its own
module (special_lgamma's ``_log_dd`` is its own, special_bessel's another).

Nothing is made at import: ``_sf_lgamma`` (an attribute read, a ``from ... import``, or
`external`) makes lgamma's dispatcher alone, and a dispatcher makes its helpers' when it first
compiles (a warm process, which links the kernels' machine code from Numba's cache, made all
60 of them before: ~10 ms of CPU on a Zen 3 for a module that calls lgamma). Each is
compiled lazily, on a kernel's first call, and cached on disk like the kernels, with the cache
set up on each function's first compile (`cache_files.cached_on_first_compile`): a process
that only loads machine code they are linked into (a warm tape process) never compiles them,
nor pays that set-up (1.3-1.8 ms).
A warm process whose kernels call none of them never imports this module (2.2 ms of CPU).
Each cache entry also keys on `cache.runtime_digest` (every file of the special functions
and vecmath): a function's machine code holds the ones it calls from other files, which
Numba's own stamp (of its file alone) does not see.

lgamma and digamma are vecmath_gamma's branching forms of its vector functions (the same bits),
inlined, wherever their range holds (`vgammaoff` false), so row kernels give the lane kernels'
numbers at ~17-23 ns a call; the plain-Python ones (the same algorithm, in Dekker's products)
take the other arguments.
"""

from __future__ import annotations

import inspect
import threading
import types
from typing import Any

from numba import njit

from ...frontends import userfunctions
from ...ir import special as _special
from ...ir import special_bessel as _special_bessel
from ...ir import special_erf as _special_erf
from ...ir import special_gamma as _special_gamma
from ...ir import special_lgamma as _special_lgamma
from . import vecmath_gamma as _vg
from .cache import runtime_digest
from .cache_files import cached_on_first_compile

_JIT = njit(error_model="numpy", nogil=True)  # cached: on first compile (below)
# special's own functions and its helper modules' (double-double gamma, lgamma, Bessel,
# erfinv), each over a copy of its module's namespace.
_MODULES = (_special, _special_gamma, _special_lgamma, _special_bessel, _special_erf)
_CLONES: dict[Any, Any] = {}  # a module's function -> its copy over the namespace copy
for _module in _MODULES:
    _namespace = dict(vars(_module))
    for _name, _value in vars(_module).items():
        if inspect.isfunction(_value) and _value.__module__ == _module.__name__:
            _clone = types.FunctionType(_value.__code__, _namespace, _name, _value.__defaults__,
                                        _value.__closure__)
            _clone.__qualname__, _clone.__module__ = _value.__qualname__, _value.__module__
            _CLONES[_value] = _clone
_MADE: dict[Any, Any] = {}  # a module's function -> its dispatcher (lgamma's: the wrapper)
_LOCK = threading.RLock()
_lgamma_scalar = _digamma_scalar = None  # the compiled plain ones, set by `_made`


def _lgamma_vector_first(x):
    """lgamma: vecmath's (inlined) where its range holds, else symgraph.ir.special's."""
    return _lgamma_scalar(x) if _vg.vgammaoff(x) else _vg.lgamma_branching(x)


def _digamma_vector_first(x):
    """digamma: vecmath's (inlined) where its range holds, else symgraph.ir.special's."""
    return _digamma_scalar(x) if _vg.vgammaoff(x) else _vg.digamma_branching(x)


# Row kernels, the tape's scalar steps and the special functions calling them (lbeta,
# polygamma) get the lane kernels' numbers, at a 1-point cost of ~15 ns instead of 60-120 (the
# same algorithm in plain Python: Dekker's products, each a call of its own). Each wrapper
# calls the compiled plain function under its name here (a global of this module).
_VECTOR_FIRST = {_special.lgamma: (_lgamma_vector_first, "_lgamma_scalar"),
                 _special.digamma: (_digamma_vector_first, "_digamma_scalar")}
_PUBLIC = {f"_sf_{name}": function for name, function in _special.SCALAR.items()}


def _names(code: types.CodeType) -> list[str]:
    """The global names a function's code (and code nested in it) reads, sorted."""
    names, todo = set(), [code]
    while todo:
        c = todo.pop()
        names.update(c.co_names)
        todo += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return sorted(names)


def _made(function: Any) -> Any:
    """The dispatcher of a special module's `function` (for lgamma and digamma, the
    vector-first wrapper, with the plain one compiled under its global name here). Its
    helpers' dispatchers are made only when it first compiles (`_with_helpers`): a process
    that links its machine code from Numba's cache makes none of them."""
    with _LOCK:
        if function not in _MADE:
            compiled = _with_helpers(_JIT(_CLONES[function]), function)
            if function in _VECTOR_FIRST:
                wrapper, scalar = _VECTOR_FIRST[function]
                globals()[scalar] = compiled
                compiled = cached_on_first_compile(_JIT(wrapper), runtime_digest)
            _MADE[function] = compiled
        return _MADE[function]


def _with_helpers(dispatcher: Any, function: Any) -> Any:
    """`dispatcher` (of `function`'s copy), cached on first compile, which first puts its
    helpers' dispatchers in the copy's namespace in their plain functions' places (so that
    compiled code calls compiled code; each of them does the same when it compiles)."""
    compile_cached = cached_on_first_compile(dispatcher, runtime_digest).compile

    def compile_with_helpers(sig: Any) -> Any:
        clone = _CLONES[function]
        for name in _names(clone.__code__):
            value = clone.__globals__.get(name)
            if inspect.isfunction(value) and value in _CLONES:
                clone.__globals__[name] = _made(value)
        return compile_cached(sig)  # (which puts Numba's own compile back in its place)

    dispatcher.compile = compile_with_helpers
    return dispatcher


def __getattr__(name: str) -> Any:
    """``_sf_<name>``: the compiled special function, made on first use."""
    function = _PUBLIC.get(name)
    if function is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    made = globals()[name] = _made(function)
    return made


def external(name: str) -> Any:
    """The compiled function a generated call ``name(...)`` means (``_sf_*`` special
    functions, ``_uf_*`` user functions), or None for any other name."""
    if name in _PUBLIC:
        return __getattr__(name)
    if name.startswith(userfunctions.GENERATED_PREFIX):
        return userfunctions.numba_implementation(name[len(userfunctions.GENERATED_PREFIX):])
    return None
