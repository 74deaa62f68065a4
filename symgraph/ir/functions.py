"""Every op of the table as a function: ``symgraph.sin(x)``, ``symgraph.where(x > 0, x, 0)``.

Comparisons are here too (``symgraph.eq(x, y)``): ``==`` on nodes stays identity, which is
structural equality because nodes are interned. Given arrays (``symgraph.erf(d)`` of a traced
array), they apply elementwise and return a `SymbolicArray`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .node import Node, apply
from .numpy_arrays import elementwise
from .numpy_ufuncs import BUILDERS
from .ops import OPS


def _function(name: str) -> Callable[..., Node]:
    spec = OPS[name]

    def function(*args) -> Node:
        for a in args:  # arrays (of nodes or numbers): elementwise, as NumPy's ufuncs are
            if isinstance(a, np.ndarray):
                return elementwise(build, args)
        return apply(name, *args)

    build = BUILDERS[name]

    arity = "any number of" if spec.arity < 0 else str(spec.arity)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``{name}`` of the op table ({arity} argument(s)), as a graph node."
    return function


FUNCTIONS: dict[str, Callable[..., Node]] = {name: _function(name) for name in OPS}
globals().update(FUNCTIONS)
__all__ = sorted(FUNCTIONS)
