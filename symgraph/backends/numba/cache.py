"""Load kernels from Numba's on-disk cache without Numba's per-process set-up.

The first call of any dispatcher in a process makes Numba refresh its typing and target
contexts before it even looks in its cache: it imports and registers every implementation it
has (NumPy functions, linalg, which imports SciPy when present, typed containers, ...). That
takes 0.15-0.3 s, and machine code loaded from the cache needs none of it: it only links
against the runtime's symbols (NRT). `preload` loads every cached overload of the dispatchers
it is given straight away, with just the runtime initialised, which takes a few milliseconds.

Kernels are then called through their entry points (`entry_point`, `Entry`) for the one
signature symgraph passes them (float64 arrays in C order), looked up with types built here:
the dispatcher's own first call would type its arguments with `numba.typeof`, which imports
numpy.ma (7-15 ms in a fresh process) to rule out masked arrays, and a read-only input would
make it compile a second signature.

This reaches into Numba's cache internals, so every step is guarded: on any surprise (another
Numba version, a stale or unreadable cache) the dispatcher is left as it was, and its first
call loads or compiles the usual way. Compiling anything new still refreshes the contexts
first, as Numba always does.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..files import read_text
from .cache_files import checked

_done: set[int] = set()  # ids of dispatchers already preloaded (they live as long as modules)
_lock = threading.Lock()


def dispatchers_of(module: ModuleType, suffixes: tuple[str, ...] = ("",)) -> list[Any]:
    """The module's cached Numba dispatchers whose names end with one of `suffixes` (the entry
    points Python calls: functions they call come linked into their machine code)."""
    return [value for name, value in vars(module).items()  # (`_cache` first: asked for
            if getattr(value, "_cache", None) is not None  # `overloads`, a deferred one is made)
            and hasattr(value, "overloads") and name.endswith(suffixes)]


def preload(dispatchers: Iterable[Any]) -> int:
    """Load each dispatcher's cached overloads (for this machine and Numba); returns how many."""
    pending = [d for d in dispatchers if id(d) not in _done]
    if not pending:
        return 0
    checked(pending)  # a damaged cache file: compiled again, never loaded
    try:
        from numba.core.compiler_lock import global_compiler_lock
    except ImportError:
        return 0
    loaded = 0
    with _lock, global_compiler_lock:
        for dispatcher in pending:
            if id(dispatcher) in _done:  # another thread loaded it while this one waited
                continue
            try:
                loaded += _load_overloads(dispatcher)
            except Exception:  # noqa: BLE001 - anything: the first call takes the usual path
                pass
            # Marked only once loaded: a thread that finds it in `_done` without the lock may
            # call it at once. Marked before, a second thread's call raced the load, found no
            # overload, and took Numba's own path (a full context refresh, 0.15-0.3 s).
            _done.add(id(dispatcher))
    return loaded


def load_on_first_call(dispatchers: Iterable[Any]) -> None:
    """Load each dispatcher's cached overloads (`preload`) when it is first called without a
    matching one, instead of now: a module's kernels for products nobody calls (its value
    kernels, when only gradients are asked for) are never read, and Numba's own first call
    (a full refresh of its contexts, and `numba.typeof` on the arguments) is skipped for the
    ones that are. A call whose types the cache lacks then takes Numba's usual path."""
    for dispatcher in dispatchers:
        if id(dispatcher) in _done or "_compile_for_args" in vars(dispatcher):
            continue
        usual = dispatcher._compile_for_args

        def first(*args: Any, _dispatcher: Any = dispatcher, _usual: Any = usual,
                  **named: Any) -> Any:
            # (Numba's dispatcher calls what this returns: the machine code for `args`)
            vars(_dispatcher).pop("_compile_for_args", None)  # once: from now on Numba's own
            if preload((_dispatcher,)) and not named:
                entry = entry_point(_dispatcher, args)  # plain arguments: no typeof
                if entry is not None:
                    return entry
            return _usual(*args, **named)  # (finds what was loaded, or compiles)

        dispatcher._compile_for_args = first


def _load_overloads(dispatcher: Any) -> int:
    cache, context = dispatcher._cache, dispatcher.targetctx
    magic = context.codegen().magic_tuple()  # this CPU and its features
    keys = [key for key in cache._cache_file._load_index()  # (signature, magic, code hashes)
            if key[1] == magic and key[0] not in dispatcher.overloads]
    if not keys:
        return 0
    # (imported here: the runtime adapter imports Numba, which `import symgraph` must not)
    from .runtime.startup import lazy_libraries, start_runtime

    start_runtime(context)  # the runtime's symbols (NRT_*), which cached code links against
    loaded = 0
    for key in keys:
        with lazy_libraries(context.codegen()):  # (its bitcode parsed only if ever needed)
            result = cache._load_overload(key[0], context)  # checks the index's source stamp
        if result is not None:
            if not result.objectmode:  # (as Numba's own load: jitted callers can link it in)
                context.insert_user_function(result.entry_point, result.fndesc,
                                             [result.library])
            dispatcher.add_overload(result)
            dispatcher._cache_hits[key[0]] += 1  # as Numba counts a load (`stats.cache_hits`)
            loaded += 1
    return loaded


def drop_if_changed(dispatchers: Iterable[Any], sources: Iterable[str]) -> bool:
    """Drop the cached machine code of `dispatchers` when a file in `sources` changed since it
    was cached; returns whether it dropped any. Numba's cache checks only the file a function
    is written in, but machine code also holds what it inlined from other files (the shipped
    tape interpreter: vecmath's functions; the tape passes: the fixed opcodes), so
    an edit there alone would leave it stale. A digest of `sources` is kept beside the cache;
    when it differs, or the cache predates it, the entries go and are compiled again on first
    use. Best effort: an unwritable cache is left alone, as Numba leaves it."""
    import os

    dispatchers = [d for d in dispatchers if getattr(d, "_cache", None) is not None]
    if not dispatchers:
        return False
    digest = hashlib.sha256()
    for source in sources:
        digest.update(Path(source).name.encode() + b"\0" + Path(source).read_bytes())
    name = Path(dispatchers[0].py_func.__code__.co_filename).stem
    dropped = False
    try:
        stamp = Path(dispatchers[0]._cache.cache_path) / f"{name}.symgraph-deps"
        if read_text(stamp) == digest.hexdigest():  # (damaged: read as different)
            return False
        for dispatcher in dispatchers:
            try:
                kept = dispatcher._cache._cache_file._load_index()  # (missing: {})
            except Exception:  # noqa: BLE001 - a damaged index: dropped too
                kept = True
            if kept:
                dispatcher._cache.flush()
                dropped = True
        stamp.parent.mkdir(parents=True, exist_ok=True)
        partial = stamp.with_name(f".{stamp.name}.{os.getpid()}")  # no reader sees half of it
        partial.write_text(digest.hexdigest())
        if stamp.is_dir() and not stamp.is_symlink():  # a damaged cache: else dropped each time
            import shutil

            shutil.rmtree(stamp, ignore_errors=True)
        os.replace(partial, stamp)
    except OSError:
        pass
    finally:
        checked(dispatchers)  # from here on, a damaged cache file compiles again
    return dropped


def inlined_files() -> list[Path]:
    """vecmath and the modules beside it that it imports: what machine code inlines from it;
    and the special functions the op table's templates call (compiled into it as well). Read
    from the files' `from .` lines, so a module split out of vecmath is covered at once."""
    here = Path(__file__).resolve().parent
    files, todo = [], [here / "vecmath.py", here / "vecmath_gamma.py", here / "special.py",
                       here.parent.parent / "ir" / "special.py"]  # (vecmath_gamma: on first use)
    while todo:
        path = todo.pop()
        if path not in files and path.is_file():
            files.append(path)
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.startswith("from .") and not line.startswith("from .."):
                    # `from .x.y import ...`: x/y.py, or the package x/y/__init__.py
                    module = path.parent.joinpath(*line.split()[1][1:].split("."))
                    todo += [module.with_suffix(".py"), module / "__init__.py"]
    return files


def runtime_files() -> list[Path]:
    """The files whose code a generated Numba module's machine code holds besides its own:
    the runtime package (lowering, lanes, claims, the adapter), what it inlines from vecmath
    and the special functions (`inlined_files`: a fixed list here once missed vecmath_trig
    and vecmath_root, so an edit of vtan left Numba's cached kernels as they were), and simd
    (which packs it runs on this CPU)."""
    here = Path(__file__).resolve().parent
    return sorted({*(here / "runtime").glob("*.py"), *inlined_files(), here / "simd.py"})


@functools.cache
def runtime_digest() -> str:
    """A digest of `runtime_files` (names and bytes). Generated modules name it in their
    header, so that a change of the runtime is a change of their text, hence of their file
    (runtime.loading): Numba's cache, which checks only that file, cannot go stale."""
    digest = hashlib.sha256()
    for path in runtime_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:24]


_DTYPES = {"float64": "float64", "int64": "int64", "int32": "int32",
           "bool": "boolean"}  # NumPy's dtype name: Numba's


def _plain_type(value: Any) -> Any:
    """Numba's type of `value` when it is plain: a writeable, aligned, C-contiguous array of
    float64/int64/int32/bool, an int or float, None, or a tuple of floats; a Numba type stands for
    itself (e.g. the runtime's `real`). None otherwise. No `numba.typeof`: for an array it
    imports numpy.ma, 7-15 ms in a fresh process, to rule out masked arrays."""
    from numba.core import types

    # Numba's types last: `isinstance(x, types.Type)` is an ABC check that walks Numba's ~190
    # type classes the first time per class of x (a warm process: ~0.45 ms per kernel).
    if type(value) is np.ndarray:
        return _array_type(value, types)
    if isinstance(value, int) and not isinstance(value, bool):
        return types.int64
    if isinstance(value, float):
        return types.float64
    if value is None:
        return types.none
    if type(value) is tuple and value and all(type(v) is float for v in value):
        return types.UniTuple(types.float64, len(value))  # a point as numbers
    return value if isinstance(value, types.Type) else None


def _array_type(value: np.ndarray, types: Any) -> Any:
    if (value.dtype.name not in _DTYPES or not value.dtype.isnative  # ('>f8': float64 too)
            or not (value.flags.c_contiguous and value.flags.aligned and value.flags.writeable)):
        return None
    return types.Array(getattr(types, _DTYPES[value.dtype.name]), value.ndim, "C")


def entry_point(dispatcher: Any, args: tuple) -> Callable[..., Any] | None:
    """The machine code `dispatcher` holds (compiled, or loaded from the cache) for arguments of
    the plain types of `args`, called without the dispatcher's type resolution; None if it
    holds none. Arrays need only the right dtype, dimensions and order (their sizes are not
    part of a type), so `args` may be empty stand-ins. Whoever calls the entry point must pass
    exactly those types: it unpacks arrays without checking them."""
    argtypes = tuple(_plain_type(a) for a in args)
    if None in argtypes:
        return None
    overload = getattr(dispatcher, "overloads", {}).get(argtypes)
    entry = getattr(overload, "entry_point", None)
    return entry if callable(entry) else None


def fastcall(dispatcher: Any, args: tuple, slow: Callable[..., Any],
             doc: str) -> Callable[..., Any] | None:
    """The CPython entry that symgraph's runtime emits beside a floats kernel's machine code for
    arguments of the types of `args` (runtime.fastcall), `slow` taking what it refuses; None
    if the dispatcher holds no such code (not compiled yet, or compiled without the runtime)."""
    overload = getattr(dispatcher, "overloads", {}).get(tuple(_plain_type(a) for a in args))
    if overload is None:
        return None
    from .runtime import fastcall as made

    address = overload.library.get_pointer_to_function(made.PREFIX
                                                       + overload.fndesc.mangled_name)
    if not address:
        return None
    return made.method(address, slow, overload.library, "value_and_grad_floats", doc)


def resolve(dispatcher: Any, stand_ins: tuple) -> Callable[..., Any]:
    """`dispatcher`'s entry point for the plain types of `stand_ins`: from the on-disk cache,
    else compiled for exactly that signature (however the first real arguments look: a
    read-only input would make the dispatcher compile a second one), Numba's first refresh
    kept light (runtime.refresh). The dispatcher itself when that fails, or for a plain
    Python function."""
    if not hasattr(dispatcher, "overloads"):
        return dispatcher
    preload((dispatcher,))
    entry = entry_point(dispatcher, stand_ins)
    if entry is None:
        signature = tuple(_plain_type(a) for a in stand_ins)
        from .runtime.refresh import light

        try:
            with light():  # Numba's first refresh without what kernels never use
                dispatcher.compile(signature)
        except Exception:  # noqa: BLE001 - compiled again with all of Numba loaded
            _forget_failures(dispatcher)
            try:
                dispatcher.compile(signature)
            except Exception:  # noqa: BLE001 - e.g. a signature it cannot take: its usual path
                return dispatcher
        entry = entry_point(dispatcher, stand_ins)
    return entry or dispatcher


def _forget_failures(dispatcher: Any) -> None:
    """Forget the typing failures Numba's dispatchers remember per signature (this one's, and
    those of functions it calls, such as a user function's implementation), so that a compile
    that failed inside `runtime.refresh.light` is tried again, not answered from memory."""
    import gc  # (a rare path: a walk over the heap's objects is affordable here)

    try:
        from numba.core.dispatcher import Dispatcher

        others = [o for o in gc.get_objects() if isinstance(o, Dispatcher)]
    except Exception:  # noqa: BLE001 - another Numba: this dispatcher's only
        others = []
    for d in [dispatcher, *others]:
        failed = getattr(getattr(d, "_compiler", None), "_failed_cache", None)
        if isinstance(failed, dict):
            failed.clear()


class Entry:
    """`dispatcher` called through its entry point for the plain types of `stand_ins`,
    resolved on the first call (`resolve`). Callers pass arguments of exactly those types;
    an input array the kernel only reads may be read-only."""

    __slots__ = ("call", "dispatcher", "stand_ins")

    def __init__(self, dispatcher: Any, stand_ins: tuple) -> None:
        self.dispatcher, self.stand_ins = dispatcher, stand_ins
        checked((dispatcher,))
        self.call = entry_point(dispatcher, stand_ins)  # there already: no first-call detour

    def __call__(self, *args: Any) -> Any:
        if self.call is None:
            self.call = resolve(self.dispatcher, self.stand_ins)
        return self.call(*args)
