"""The special functions of `symgraph.ir.special`, compiled by Numba: what generated Numba
modules and the tape interpreter call (``_sf_gamma(x)``: the op table's ``nb`` templates), and
the user functions' Numba implementations (`symgraph.ir.userfunctions`) by their generated
names (``_uf_<name>``).

`symgraph.ir.special` is plain Python on floats; its helpers are registered with Numba
(``register_jitable``) so that the public functions compile as they are: the same source gives
the Python backend's numbers and Numba's. Compiled lazily, on a kernel's first call, and cached
on disk (``cache=True``) like the kernels.
"""

from __future__ import annotations

import inspect
from typing import Any

from numba import njit
from numba.extending import register_jitable

from ...frontends import userfunctions
from ...ir import special as _special

for _name, _value in vars(_special).items():  # every function, so each calls the others
    if inspect.isfunction(_value) and _value.__module__ == _special.__name__:
        register_jitable(_value)

_JIT = njit(cache=True, error_model="numpy", nogil=True)
_sf_gamma = _JIT(_special.gamma)
_sf_lgamma = _JIT(_special.lgamma)
_sf_digamma = _JIT(_special.digamma)
_sf_polygamma = _JIT(_special.polygamma)
_sf_beta = _JIT(_special.beta)
_sf_lbeta = _JIT(_special.lbeta)
_sf_erfinv = _JIT(_special.erfinv)
_sf_erfcinv = _JIT(_special.erfcinv)
_sf_besselj = _JIT(_special.besselj)
_sf_bessely = _JIT(_special.bessely)
_sf_xlogy = _JIT(_special.xlogy)


def external(name: str) -> Any:
    """The compiled function a generated call ``name(...)`` means (``_sf_*`` special
    functions, ``_uf_*`` user functions), or None for any other name."""
    if name.startswith("_sf_"):
        return globals().get(name)
    if name.startswith(userfunctions.GENERATED_PREFIX):
        return userfunctions.numba_implementation(name[len(userfunctions.GENERATED_PREFIX):])
    return None
