"""The one-point functions a compiled function's methods are, where its module has them.

A scalar expression's Numba module (backends.numba.point) holds ``NAME_point`` (the kernel,
a point as a tuple of numbers or a float64 array), ``value_grad_floats`` (floats in, floats
out) and ``NAME_api``, which makes the functions ``fn.value_and_grad``, ``fn.grad`` and the
value call from the kernel's two compiled entry points and the API's checked paths.
`PointEntries` hands those entry points out: the machine code itself when the kernel has it
for that signature (compiled before, or loaded from the cache), else a first call that
compiles it and has the methods bound again, so that from the second call on there is no
layer between the API's function and the machine code.

``fn.value_and_grad_floats`` is, once ``value_grad_floats`` is compiled, the CPython entry
that symgraph's Numba runtime emits beside its machine code (backends.numba.runtime.fastcall:
numbers in, ``(value, (g0, ..., g_{n-1}))`` out, no Python frame), and before that its entry
point inside one try/except (`floats_method`). Anything either refuses (a wrong count, text,
None, an array) goes to `checked_floats`, which says what is wrong naming the argument, or
computes the same numbers through ``fn.value_and_grad`` (the Python backend, the tape and
interpreted first calls take that path every time).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..backends.numba.cache import entry_point, fastcall, resolve
from ..frontends.values import real_array

Call = Callable[..., Any]
FLOATS = "value_and_grad_floats"


class PointEntries:
    """The entry points of a module's point kernels, for `n` inputs; `rebind` binds the
    methods again (after a first call compiled one)."""

    def __init__(self, module: Any, n: int, rebind: Callable[[], None]) -> None:
        self.module, self.n, self.rebind = module, n, rebind
        self.resolved: dict[tuple[str, str], Call] = {}

    def _real(self) -> Any:
        """The runtime's `real` type, if the module's kernels are lowered by it (else None:
        Numba's plain float64 would parse text, so the checked path takes every point)."""
        from ..backends.numba import runtime  # (loaded already: the module imports it)

        return runtime.real if runtime.LOWERED else None

    def methods(self, kernel: str, slow: list[Call]) -> list[Call]:
        """The `slow` methods behind the module's one-point functions for program `kernel`,
        if it has them: numbers or a float64 array go straight to ``NAME_point``, all else
        to `slow` (the same numbers, the same errors)."""
        api = getattr(self.module, kernel + "_api", None)
        point = getattr(self.module, kernel + "_point", None)
        if api is None or point is None or self._real() is None:
            return slow
        from numba import types

        vector = types.Array(types.float64, 1, "A")  # any strides: the API checks no flags
        gradient = () if kernel == "value" else (vector,)
        numbers = types.UniTuple(self._real(), self.n)
        made = api(self._entry(point, (numbers, *gradient), "numbers"),
                   self._entry(point, (vector, *gradient), "array"), *slow)
        calls = list(made) if isinstance(made, tuple) else [made]
        for call, method in zip(calls, slow):
            call.__name__, call.__qualname__ = method.__name__, method.__qualname__
            call.__doc__ = method.__doc__
        return calls

    def floats(self, kernel: str, slow: Call, doc: str) -> Call:
        """``fn.value_and_grad_floats``: `kernel`'s ``NAME_floats`` as its own CPython entry
        (runtime.fastcall: no Python frame) once compiled, else its entry point behind one
        try/except, where the module has it; else `slow`. `doc` is the method's docstring."""
        floats = getattr(self.module, kernel + "_floats", None)
        if floats is None or self._real() is None:
            return _named(slow, doc)
        stand_ins = (self._real(),) * self.n
        entry = self._entry(floats, stand_ins, "floats")
        return fastcall(floats, stand_ins, slow, doc) or _named(floats_method(entry, slow), doc)

    def _entry(self, kernel: Any, stand_ins: tuple, form: str) -> Call:
        """`kernel`'s entry point for the types of `stand_ins` (its machine code, no type
        resolution), or a first call that compiles it and binds the methods again."""
        key = (kernel.__name__, form)
        entry = self.resolved.get(key) or entry_point(kernel, stand_ins)
        if entry is not None:
            return entry

        def first(*args: Any) -> Any:
            # (`resolve` gives the dispatcher itself when compiling that signature failed;
            # a method kept from before the rebinding calls this again: resolved once)
            call = self.resolved.get(key)
            if call is None:
                self.resolved[key] = call = resolve(kernel, stand_ins)
                self.rebind()
            return call(*args)

        return first


def _named(method: Call, doc: str) -> Call:
    method.__qualname__, method.__doc__ = "CompiledFunction." + FLOATS, doc
    return method


def floats_method(entry: Call, slow: Call) -> Call:
    """The method: `entry` (compiled: numbers in, floats out), and `slow` for whatever it
    refuses (the checked path: the same numbers, or an error naming the argument)."""
    def value_and_grad_floats(*values: Any) -> tuple[float, tuple[float, ...]]:
        try:
            return entry(*values)
        except Exception:  # noqa: BLE001 - refused by the entry point: the checked path says why
            return slow(*values)

    return value_and_grad_floats


def checked_floats(fn: Any, names: list[str], kernel: str) -> Call:
    """``fn.value_and_grad_floats`` on the checked path: one real number per variable of
    `names` (as ``fn.value_and_grad`` reads them; text, None, complex, masked values and
    arrays are refused, naming the argument), then ``fn.value_and_grad``'s numbers as floats
    (program `kernel`'s: interpreted, its switch counts this path's loss too). Kept by a
    caller after the methods were bound again (``fn._bound`` counts the bindings), it calls
    the method bound now: the compiled one, once an interpreted function switched."""
    n, bound = len(names), getattr(fn, "_bound", 0)
    pending = getattr(getattr(fn, "_built", None), "pending", None)  # interpreted first
    pending = pending.get(kernel) if isinstance(pending, dict) else None

    def value_and_grad_floats(*values: Any) -> tuple[float, tuple[float, ...]]:
        if getattr(fn, "_bound", 0) != bound:  # kept from before the methods were bound again
            return fn.value_and_grad_floats(*values)  # (e.g. the switch to compiled kernels)
        if len(values) != n:
            raise TypeError(f"{FLOATS} takes {n} number(s), one per variable {names}; got "
                            f"{len(values)}")
        # Plain floats, the common case, need no look each (one look would cost more than
        # the kernel's whole call for a few hundred arguments); the rest, one by one.
        point = values if set(map(type, values)) <= _JUST_FLOAT else [
            _number(v, names, i) for i, v in enumerate(values)]
        value, gradient = fn.value_and_grad(*point)
        if pending is not None:  # (runtime.interpret: the switch counts this path's own loss)
            pending.charge_floats(n)
        return value, tuple(gradient.tolist())

    return value_and_grad_floats


_REAL_SCALARS = (np.floating, np.integer, np.bool_)
_JUST_FLOAT = {float}


def _number(value: Any, names: list[str], i: int) -> float:
    """`value`, argument `i`, as a float, if it is one real number (as the API's checked path
    reads one)."""
    if type(value) in (float, int, bool) or isinstance(value, _REAL_SCALARS):
        try:
            return float(value)
        except OverflowError as error:  # an int beyond floats
            raise OverflowError(f"{FLOATS}: {_what(names, i)}: {error}") from None
    what = _what(names, i)
    try:
        array = real_array(value, f"{FLOATS}: {what}")  # (TypeError naming it, if no number)
    except OverflowError as error:  # an int beyond floats
        raise OverflowError(f"{FLOATS}: {what}: {error}") from None
    if array.ndim:
        raise TypeError(f"{FLOATS}: {what} must be one real number; got an array of shape "
                        f"{array.shape} (value_and_grad takes arrays and batches)")
    return float(array)


def _what(names: list[str], i: int) -> str:
    return f"the value of {names[i]!r} (argument {i})"
