"""The one-point functions a compiled function's methods are, where its module has them.

A scalar expression's Numba module (backends.numba.point) holds ``NAME_point`` (the kernel,
a point as a tuple of floats or a float64 array) and ``NAME_api``, which makes the functions
``fn.value_and_grad``, ``fn.grad`` and the value call from the kernel's two compiled entry
points and the API's checked paths. `PointEntries` hands those entry points out: the machine
code itself when the kernel has it for that signature (compiled before, or loaded from the
cache), else a first call that compiles it and has the methods bound again, so that from the
second call on there is no layer between the API's function and the machine code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..backends.numba.cache import entry_point, resolve

Call = Callable[..., Any]


class PointEntries:
    """The entry points of a module's point kernels, for `n` inputs; `rebind` binds the
    methods again (after a first call compiled one)."""

    def __init__(self, module: Any, n: int, rebind: Callable[[], None]) -> None:
        self.module, self.n, self.rebind = module, n, rebind
        self.resolved: dict[tuple[str, str], Call] = {}

    def methods(self, kernel: str, slow: list[Call]) -> list[Call]:
        """The `slow` methods behind the module's one-point functions for program `kernel`,
        if it has them: numbers or a float64 array go straight to ``NAME_point``, all else
        to `slow` (the same numbers, the same errors)."""
        api = getattr(self.module, kernel + "_api", None)
        point = getattr(self.module, kernel + "_point", None)
        if api is None or point is None:
            return slow
        gradient = () if kernel == "value" else (np.empty(0),)
        made = api(self._entry(point, ((0.0,) * self.n, *gradient), "numbers"),
                   self._entry(point, (np.empty(0), *gradient), "array"), *slow)
        calls = list(made) if isinstance(made, tuple) else [made]
        for call, method in zip(calls, slow):
            call.__name__, call.__qualname__ = method.__name__, method.__qualname__
            call.__doc__ = method.__doc__
        return calls

    def _entry(self, kernel: Any, stand_ins: tuple, form: str) -> Call:
        """`kernel`'s entry point for the types of `stand_ins` (its machine code, no type
        resolution), or a first call that compiles it and binds the methods again."""
        key = (kernel.__name__, form)
        entry = self.resolved.get(key) or entry_point(kernel, stand_ins)
        if entry is not None:
            return entry

        def first(*args: Any) -> Any:
            # (`resolve` gives the dispatcher itself when compiling that signature failed)
            self.resolved[key] = call = resolve(kernel, stand_ins)
            self.rebind()
            return call(*args)

        return first
