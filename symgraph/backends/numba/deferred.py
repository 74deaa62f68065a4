"""Numba dispatchers made on first use: vecmath's functions (`jit`).

A generated module imports the vecmath functions its lane code calls, and the runtime's
lowering inlines them from their source (``py_func``): a process that loads every kernel from
Numba's cache never calls nor types them. Making vecmath's 31 dispatchers at import cost each
such process 1-2 ms of CPU (load ~3); a `DeferredJit` makes its dispatcher when it is first
called, typed by Numba (a jitted caller compiling: `_numba_type_`, which Numba's ``typeof``
asks any object for) or asked for any other attribute of a dispatcher. Until then it is its
Python function and the options, nothing more.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

_lock = threading.RLock()


class DeferredJit:
    """``numba.njit(**options)(py_func)``, made on first use (thread-safe, once)."""

    # Not a cached kernel (symgraph.backends.numba.cache.dispatchers_of skips it unmade).
    _cache = None

    def __init__(self, py_func: Callable, options: dict[str, Any]) -> None:
        functools.update_wrapper(self, py_func)  # (name, docstring, module: as a dispatcher)
        self.py_func, self._options, self._made = py_func, options, None

    @property
    def dispatcher(self) -> Any:
        """The Numba dispatcher (made now if not yet)."""
        made = self._made
        if made is None:
            with _lock:
                if self._made is None:
                    from numba import njit

                    self._made = njit(**self._options)(self.py_func)
                made = self._made
        return made

    @property
    def _numba_type_(self) -> Any:  # what Numba's typeof takes for this value: its dispatcher's
        return self.dispatcher._numba_type_

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.dispatcher(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # (only for what the instance lacks)
        if name.startswith("__") or name in ("_made", "_options", "py_func"):
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def __repr__(self) -> str:
        return f"<deferred njit {self.__qualname__}>"


def jit(**options: Any) -> Callable[[Callable], DeferredJit]:
    """A decorator like ``numba.njit(**options)`` whose dispatcher is made on first use."""
    return lambda py_func: DeferredJit(py_func, options)
