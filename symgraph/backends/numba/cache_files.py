"""Numba's on-disk cache files, checked: a damaged file is compiled again, never loaded.

Numba keeps a cached function as an index (``.nbi``: its source stamp and which data file
holds each signature) and data files (``.nbc``: the machine code), both plain pickles: a
truncated one raises from the dispatcher's first call in every later process (for the tape
interpreter: every tape, and `symgraph precompile`), and a flipped bit in machine code is
loaded as it is. `checked` gives symgraph's dispatchers a cache file that writes a SHA-256
of the file's name and the pickle's length and CRC-32 before each pickle and reads a file
only when it matches (so another function's valid file copied in its place fails too):
anything else reads as absent, so the function compiles and its files are written anew. Its
index names a version of its own, so stock Numba reading it sees another version's cache
(and compiles), and a stock index reads here as absent: neither side ever unpickles the
other's files.

`place_cache` gives Numba a temporary cache folder (with a warning) when it has none it can
write: a read-only install with no writable home otherwise fails at import, since Numba
refuses to define a ``cache=True`` function with nowhere to cache it.

`cached_on_first_compile` gives a dispatcher defined without ``cache=True`` its (checked)
cache when it first compiles, not when it is defined: Numba's cache set-up (a locator, the
source's stamp, the index's name) for special.py's 46 functions costs every process that
imports them (each tape process) 1.3-1.8 ms of CPU (load ~5; special's import, 12 pinned
pairs: median 9.1 -> 8.2 ms), and one that only loads machine code they are linked into
never compiles them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import sys
import threading
import warnings
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

_TAG = "+symgraph-crc32"  # appended to Numba's version in a checked index


@functools.cache
def _checked_class() -> type:
    from numba.core.caching import IndexDataCacheFile

    class CheckedCacheFile(IndexDataCacheFile):
        """Numba's index and data files with a digest before each pickle."""

        def __init__(self, original: Any) -> None:
            self.__dict__.update(vars(original))  # the same folder, names and source stamp
            self._version = f"{original._version}{_TAG}"

        def _load_index(self) -> dict:
            try:
                with open(self._index_path, "rb") as f:
                    version = pickle.load(f)
                    data = f.read()
                if version != self._version:
                    return {}
                stamp, overloads = _unpickled(self._index_name, data)
            except Exception:  # noqa: BLE001 - missing or damaged: no entries (saved anew)
                return {}
            return overloads if stamp == self._source_stamp else {}

        def _save_index(self, overloads: dict) -> None:
            _clear_folder(self._index_path)
            data = _pickled(self._index_name, (self._source_stamp, overloads))
            with self._open_for_write(self._index_path) as f:
                pickle.dump(self._version, f, protocol=-1)
                f.write(data)

        def _save_data(self, name: str, data: Any) -> None:
            _clear_folder(self._data_path(name))
            data = _pickled(name, data)
            with self._open_for_write(self._data_path(name)) as f:
                f.write(data)

        def _load_data(self, name: str) -> Any:
            with open(self._data_path(name), "rb") as f:
                data = f.read()
            try:
                return _unpickled(name, data)
            except Exception as error:  # noqa: BLE001 - `load` takes an OSError as absent
                raise OSError(f"damaged cache file {name}") from error

    return CheckedCacheFile


def _clear_folder(path: str) -> None:
    """Remove a folder where a cache file belongs (a damaged cache), so the file can be
    written: otherwise every process compiles again and fails to save."""
    if os.path.isdir(path) and not os.path.islink(path):
        import shutil

        shutil.rmtree(path, ignore_errors=True)


def _pickled(name: str, obj: Any) -> bytes:
    """`obj` pickled, after a digest of the file's name and the pickle's length and CRC-32:
    another function's file copied in its place (valid, but not its machine code) does not
    match either, nor does a truncated or bit-flipped one (the CRC finds every error burst of
    up to 32 bits, and misses other damage 1 time in 2^32). A SHA-256 of the whole pickle
    (a 1,000-operation kernel's machine code and bitcode, 1.2-1.4 MB) took 0.7-0.8 ms, the
    CRC takes 0.2 (load 4)."""
    data = pickle.dumps(obj, protocol=-1)
    return _check(name, data) + data


def _check(name: str, data: bytes | memoryview) -> bytes:
    size = len(data).to_bytes(8, "little") + zlib.crc32(data).to_bytes(4, "little")
    return hashlib.sha256(name.encode() + b"\0" + size).digest()


def _unpickled(name: str, data: bytes) -> Any:
    body = memoryview(data)[32:]
    if len(data) < 32 or _check(name, body) != data[:32]:
        raise ValueError("digest mismatch")
    return pickle.loads(body)


def checked(dispatchers: Iterable[Any]) -> None:
    """Give each cached dispatcher in `dispatchers` the checked cache file (once), and make a
    failure to load from its cache a compile, and a failure to save there (a full disk) no
    failure of the call."""
    for dispatcher in dispatchers:
        cache = getattr(dispatcher, "_cache", None)
        if type(cache) is CacheOnUse:  # (checked when it is made)
            continue
        cache_file = getattr(cache, "_cache_file", None)
        if cache_file is None or getattr(cache, "_symgraph_checked", False):
            continue
        try:
            cache._cache_file = _checked_class()(cache_file)
            cache.load_overload = functools.partial(_load_overload, cache.load_overload)
            cache.save_overload = functools.partial(_save_overload, cache.save_overload)
            cache._symgraph_checked = True
        except Exception:  # noqa: BLE001 - another Numba: its own cache, as it is
            continue


def cached_on_first_compile(dispatcher: Any, depends: Any = None) -> Any:
    """`dispatcher` (defined without ``cache=True``), given Numba's cache, checked, when it
    first compiles (a call, or a jitted caller typing it): it then loads from its cache files
    as a ``cache=True`` one would, or compiles and saves them. `depends()`, if given, is a
    digest of the other files its machine code holds (the functions it calls, linked in):
    it joins the source's stamp, so an edit there compiles it again. Returns `dispatcher`."""
    def compile_cached(sig: Any) -> Any:
        from numba.core.compiler_lock import global_compiler_lock

        with global_compiler_lock:  # (re-entrant: Numba's own compile takes it too)
            if vars(dispatcher).pop("compile", None) is not None:  # once; then Numba's own
                try:
                    place_cache()  # (somewhere to cache, or a temporary folder, as at import)
                    dispatcher.enable_caching()
                    checked((dispatcher,))
                    if depends is not None:
                        cache_file = dispatcher._cache._cache_file
                        cache_file._source_stamp = (cache_file._source_stamp, depends())
                except Exception:  # noqa: BLE001 - nowhere to cache: compiled, not cached
                    pass
            return dispatcher.compile(sig)

    dispatcher.compile = compile_cached
    return dispatcher


def _load_overload(load: Any, sig: Any, target_context: Any) -> Any:
    try:
        return load(sig, target_context)
    except Exception:  # noqa: BLE001 - a file that reads but does not rebuild: compile
        return None


def _save_overload(save: Any, sig: Any, data: Any) -> None:
    try:
        save(sig, data)
    except OSError:  # a full disk, a folder made read-only: only the saving is lost
        pass


@functools.cache
def place_cache() -> str | None:
    """Make sure Numba has a cache folder it can write, before symgraph's ``cache=True``
    functions are defined: beside the package, Numba's user-wide folder, or
    ``$NUMBA_CACHE_DIR``; else a temporary folder (returned, with a warning)."""
    from numba.core import config

    if config.CACHE_DIR:
        return None
    from ..files import temporary_folder, unwritable

    places = [Path(__file__).resolve().parent / "__pycache__"]
    try:
        from numba.misc.appdirs import AppDirs

        places.append(Path(AppDirs(appname="numba", appauthor=False).user_cache_dir))
    except Exception:  # noqa: BLE001 - (only the places Numba itself would look)
        pass
    if any(unwritable(place) is None for place in places):
        return None
    folder = temporary_folder() / "numba"
    folder.mkdir(exist_ok=True)
    config.CACHE_DIR = str(folder)
    os.environ.setdefault("NUMBA_CACHE_DIR", str(folder))  # for worker processes too
    warnings.warn(f"symgraph: Numba has no writable cache folder (the install is read-only "
                  f"and so is the home folder); using {folder} (set NUMBA_CACHE_DIR to keep "
                  "compiled kernels between runs)", RuntimeWarning, stacklevel=2)
    return str(folder)


_folders_checked: set[str] = set()  # cache folders Numba found writable in this process
_patch = threading.Lock()
_patched = [0, None, None]  # how many `folders_checked_once` are open; Numba's own methods


@contextlib.contextmanager
def folders_checked_once() -> Iterator[None]:
    """Within: Numba checks that a cache folder is writable once a process, not once per
    ``cache=True`` function it defines (its locator makes the folder and a temporary file in
    it for each: ~0.25 ms a function, 20 ms for the tape interpreter's 93 on a loaded
    machine). The first check of each folder is Numba's own, so an unwritable one still fails
    as it would. And a ``cache=True`` function defined within gets its cache on first use
    (`CacheOnUse`), not when it is defined."""
    caching = sys.modules.get("numba.core.caching")
    dispatching = sys.modules.get("numba.core.dispatcher")
    locator = getattr(caching, "_CacheLocator", None)
    dispatcher = getattr(dispatching, "Dispatcher", None)
    if (locator is None or "ensure_cache_path" not in vars(locator) or dispatcher is None
            or "enable_caching" not in vars(dispatcher)):
        yield
        return
    with _patch:
        if _patched[0] == 0:
            _patched[1] = vars(locator)["ensure_cache_path"]
            _patched[2] = vars(dispatcher)["enable_caching"]
            locator.ensure_cache_path = _ensure_once
            dispatcher.enable_caching = _cache_on_use
        _patched[0] += 1
    try:
        yield
    finally:
        with _patch:
            _patched[0] -= 1
            if _patched[0] == 0:
                locator.ensure_cache_path = _patched[1]
                dispatcher.enable_caching = _patched[2]


_making = threading.RLock()  # (re-entrant: checking a cache may ask for the dispatcher's)


def _cache_on_use(self: Any) -> None:
    self._cache = CacheOnUse(self, _patched[2])


class CacheOnUse:
    """A dispatcher's Numba cache (`FunctionCache`), made and `checked` when first asked for
    anything. Numba makes it when a ``cache=True`` function is defined: its locator, the
    source's stamp and the index's name, ~0.17 ms a function, for every kernel of a
    generated module (7 for value and gradient) though a warm process loads one or two."""

    __slots__ = ("_sg_dispatcher", "_sg_enable", "_sg_made")

    def __init__(self, dispatcher: Any, enable: Any) -> None:
        self._sg_dispatcher, self._sg_enable, self._sg_made = dispatcher, enable, None

    def made(self) -> Any:
        """The dispatcher's own cache, made (once) and checked."""
        if self._sg_made is None:
            with _making:
                if self._sg_made is None:
                    dispatcher = self._sg_dispatcher
                    try:
                        self._sg_enable(dispatcher)  # Numba's enable_caching: a FunctionCache
                    except Exception:  # noqa: BLE001 - its file gone since (no locator for a
                        from numba.core.caching import NullCache  # deleted folder): compiled,

                        dispatcher._cache = NullCache()  # not cached, as with a full disk
                    checked((dispatcher,))
                    self._sg_made = dispatcher._cache
        return self._sg_made

    def __getattr__(self, name: str) -> Any:
        return getattr(self.made(), name)


def _ensure_once(self: Any) -> None:
    path = self.get_cache_path()
    if path not in _folders_checked:
        _patched[1](self)
        _folders_checked.add(path)
