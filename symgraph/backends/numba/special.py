"""The special functions of `symgraph.ir.special`, compiled by Numba: what generated Numba
modules and the tape interpreter call (``_sf_gamma(x)``: the op table's ``nb`` templates), and
the user functions' Numba implementations (`symgraph.ir.userfunctions`) by their generated
names (``_uf_<name>``).

`symgraph.ir.special` is plain Python on floats; each of its functions is compiled here as it
is, over a copy of its module's namespace in which its helpers are their compiled selves (so a
compiled function calls compiled ones): the same source gives the Python backend's numbers and
Numba's, through Numba's public API alone. Compiled lazily, on a kernel's first call, and cached
on disk like the kernels, with the cache set up on each function's first compile
(`cache_files.cached_on_first_compile`): a process that only loads machine code they are
linked into (a warm tape process) never compiles them, nor pays that set-up (1.3-1.8 ms).
A warm process whose kernels call none of them never imports this module (2.2 ms of CPU).
Each cache entry also keys on `cache.runtime_digest` (every file of the special functions
and vecmath): a function's machine code holds the ones it calls from other files, which
Numba's own stamp (of its file alone) does not see.

lgamma and digamma are vecmath_gamma's vector functions, inlined, wherever their range holds
(`vgammaoff` false), so row kernels give the lane kernels' numbers at ~25 ns a call; the
plain-Python ones (the same algorithm, in Dekker's products) take the other arguments.
"""

from __future__ import annotations

import inspect
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
# erfinv), each over a copy of its module's namespace; after compiling, every copy sees all
# compiled ones.
_MODULES = (_special, _special_gamma, _special_lgamma, _special_bessel, _special_erf)
_NAMESPACES = [dict(vars(module)) for module in _MODULES]
_COMPILED: dict[str, Any] = {}
for _module, _namespace in zip(_MODULES, _NAMESPACES):
    for _name, _value in vars(_module).items():
        if inspect.isfunction(_value) and _value.__module__ == _module.__name__:
            _clone = types.FunctionType(_value.__code__, _namespace, _name, _value.__defaults__,
                                        _value.__closure__)
            _clone.__qualname__, _clone.__module__ = _value.__qualname__, _value.__module__
            _COMPILED[_name] = cached_on_first_compile(_JIT(_clone), runtime_digest)
_lgamma_scalar, _digamma_scalar = _COMPILED["lgamma"], _COMPILED["digamma"]


def _lgamma_vector_first(x):
    """lgamma: vecmath's (inlined) where its range holds, else symgraph.ir.special's."""
    return _lgamma_scalar(x) if _vg.vgammaoff(x) else _vg.vlgamma(x)


def _digamma_vector_first(x):
    """digamma: vecmath's (inlined) where its range holds, else symgraph.ir.special's."""
    return _digamma_scalar(x) if _vg.vgammaoff(x) else _vg.vdigamma(x)


# Row kernels, the tape's scalar steps and the special functions calling them (lbeta,
# polygamma) get the lane kernels' numbers, at a 1-point cost of ~15 ns instead of 60-120 (the
# same algorithm in plain Python: Dekker's products, each a call of its own).
_COMPILED["lgamma"] = cached_on_first_compile(_JIT(_lgamma_vector_first), runtime_digest)
_COMPILED["digamma"] = cached_on_first_compile(_JIT(_digamma_vector_first), runtime_digest)
for _namespace in _NAMESPACES:
    _namespace.update(_COMPILED)

_sf_gamma = _COMPILED["gamma"]
_sf_lgamma = _COMPILED["lgamma"]
_sf_digamma = _COMPILED["digamma"]
_sf_polygamma = _COMPILED["polygamma"]
_sf_beta = _COMPILED["beta"]
_sf_lbeta = _COMPILED["lbeta"]
_sf_erfinv = _COMPILED["erfinv"]
_sf_erfcinv = _COMPILED["erfcinv"]
_sf_besselj = _COMPILED["besselj"]
_sf_bessely = _COMPILED["bessely"]
_sf_xlogy = _COMPILED["xlogy"]


def external(name: str) -> Any:
    """The compiled function a generated call ``name(...)`` means (``_sf_*`` special
    functions, ``_uf_*`` user functions), or None for any other name."""
    if name.startswith("_sf_"):
        return globals().get(name)
    if name.startswith(userfunctions.GENERATED_PREFIX):
        return userfunctions.numba_implementation(name[len(userfunctions.GENERATED_PREFIX):])
    return None
