"""Load kernels from Numba's on-disk cache without Numba's per-process set-up.

The first call of any dispatcher in a process makes Numba refresh its typing and target
contexts before it even looks in its cache: it imports and registers every implementation it
has (NumPy functions, linalg, which imports SciPy when present, typed containers, ...). That
takes 0.15-0.3 s, and machine code loaded from the cache needs none of it: it only links
against the runtime's symbols (NRT). `preload` loads every cached overload of the dispatchers
it is given straight away, with just the runtime initialised, which takes a few milliseconds.

This reaches into Numba's cache internals, so every step is guarded: on any surprise (another
Numba version, a stale or unreadable cache) the dispatcher is left as it was, and its first
call loads or compiles the usual way. Compiling anything new still refreshes the contexts
first, as Numba always does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from types import ModuleType
from typing import Any

_done: set[int] = set()  # ids of dispatchers already preloaded (they live as long as modules)
_lock = threading.Lock()


def dispatchers_of(module: ModuleType, suffixes: tuple[str, ...] = ("",)) -> list[Any]:
    """The module's cached Numba dispatchers whose names end with one of `suffixes` (the entry
    points Python calls: functions they call come linked into their machine code)."""
    return [value for name, value in vars(module).items()
            if hasattr(value, "overloads") and getattr(value, "_cache", None) is not None
            and name.endswith(suffixes)]


def preload(dispatchers: Iterable[Any]) -> int:
    """Load each dispatcher's cached overloads (for this machine and Numba); returns how many."""
    pending = [d for d in dispatchers if id(d) not in _done]
    if not pending:
        return 0
    try:
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.runtime import rtsys
    except ImportError:
        return 0
    loaded = 0
    with _lock, global_compiler_lock:
        for dispatcher in pending:
            _done.add(id(dispatcher))
            try:
                loaded += _load_overloads(dispatcher, rtsys)
            except Exception:  # noqa: BLE001 - anything: the first call takes the usual path
                continue
    return loaded


def _load_overloads(dispatcher: Any, rtsys: Any) -> int:
    cache, context = dispatcher._cache, dispatcher.targetctx
    magic = context.codegen().magic_tuple()  # this CPU and its features
    keys = [key for key in cache._cache_file._load_index()  # (signature, magic, code hashes)
            if key[1] == magic and key[0] not in dispatcher.overloads]
    if not keys:
        return 0
    rtsys.initialize(context)  # the runtime's symbols (NRT_*), which cached code links against
    loaded = 0
    for key in keys:
        result = cache._load_overload(key[0], context)  # checks the index's source stamp
        if result is not None:
            dispatcher.add_overload(result)
            dispatcher._cache_hits[key[0]] += 1  # as Numba counts a load (`stats.cache_hits`)
            loaded += 1
    return loaded
