"""How generated modules are imported: from their real path, so tracebacks,
`inspect.getsource` and Numba's on-disk cache (keyed by the file's path and stamp) work on
them, with their bytecode kept beside them under a check (`_CheckedLoader`: a digest of the
text's name, the file's size and time stamp, the code's length and CRC): a damaged copy, or
one kept for another state of the file, is compiled again, never run.

The text itself is only needed to compile (bytecode or machine code) or to show: a caller
that knows a file by its digest-name may pass a function that reads and checks it on first
use (runtime.loading.load_kept), and a warm process then never reads a 1 MB module's text
(1-2 ms with its digest). Compiles read a function's text from that checked text
(`source_of`), never from the file, which may have changed since; a file edited since its
bytecode was kept (its stamp changed) has its bytecode compiled again from the checked text.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import inspect
import linecache
import marshal
import os
import sys
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from . import lazy_code
from .files import write_atomically

Text = str | Callable[[], str]  # a module's text, or what reads and checks it on first use


def import_file(name: str, path: Path, source: Text | None = None, digest: str | None = None,
                lazy: tuple[str, ...] = ()) -> ModuleType:
    """The module `name` from `path`: the one already imported from there, else imported now
    (and registered in `sys.modules` only if its code ran to the end). `source`: the file's
    text, already read and checked by the caller, or a function giving it when first needed;
    `digest`: its `source_digest` (runtime.loading: the file's name), required with a
    function. `lazy`: suffixes of names of functions imported as stubs (backends.lazy_code).
    Under a lock: a module is in `sys.modules` while its code runs, and another thread
    compiling the same expression must not take it half made (``no attribute 'value_row'``)."""
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__file__", None) == str(path) and (
            name not in _importing):
        return module
    with _import_lock:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None) == str(path):
            return module
        if source is None:
            source = path.read_bytes().decode("utf-8")
        loader = _CheckedLoader(name, str(path), source, digest, lazy)
        # Tracebacks read a function's lines through linecache: the text is there lazily
        # (read from the loader when the file is gone: a 1 MB text split takes 2 ms).
        linecache.cache[str(path)] = (loader.text_or_none,)
        spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        _importing.add(name)
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        finally:
            _importing.discard(name)
        return module


_import_lock = threading.RLock()  # re-entrant: a generated module's code may import another
_importing: set[str] = set()  # names whose code is running (in sys.modules, not yet complete)


def _unlock_in_child() -> None:  # a fork from another thread may have copied the lock held
    global _import_lock
    _import_lock = threading.RLock()
    _importing.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_unlock_in_child)


def text_of(module: Any) -> str | None:
    """The checked text a generated module was imported from (read now if it was not yet);
    None for any other module."""
    loader = getattr(module, "__loader__", None)
    return loader.text() if isinstance(loader, _CheckedLoader) else None


def source_of(function: Any) -> str:
    """The text of top-level function `function`: from the checked text its generated module
    was imported from (`text_of`), not from the file, which may have changed since;
    `inspect.getsource` for any other function."""
    text = text_of(sys.modules.get(function.__module__))
    if text is None:
        return inspect.getsource(function)
    lines = text.splitlines(keepends=True)
    return "".join(inspect.getblock(lines[function.__code__.co_firstlineno - 1:]))


class _CheckedLoader(importlib.machinery.SourceFileLoader):
    """Imports a generated module from the text its caller checked; keeps its bytecode in
    ``__pycache__`` after a check (`_code_check`) of the text's digest, the file's stamp,
    Python's bytecode version and the code, and compiles the text again when it does not
    match (a truncated or bit-flipped copy: CPython's own .pyc carries no check of its
    contents). With `lazy` (name suffixes), the module is imported from a second kept copy
    whose functions of those names are stubs (backends.lazy_code), their code read from the
    first on their first call."""

    def __init__(self, name: str, path: str, source: Text, digest: str | None = None,
                 lazy: tuple[str, ...] = ()) -> None:
        super().__init__(name, path)
        self._source = source  # (encoded only to hash or compile it: a 1 MB text, 0.2 ms)
        if digest is None:  # (as runtime.loading names files)
            digest = hashlib.sha256(self.text().encode()).hexdigest()[:24]
        self._digest, self._lazy = digest, lazy
        self._lock = threading.Lock()

    def text(self) -> str:
        """The module's text (read and checked on first use when the caller passed a
        function)."""
        if callable(self._source):
            with self._lock:
                if callable(self._source):
                    self._source = self._source()
        return self._source

    def text_or_none(self) -> str | None:
        try:
            return self.text()
        except Exception:  # noqa: BLE001 - only a traceback's lines lost
            return None

    def _kept(self, suffix: str) -> tuple[Path, bytes]:
        try:
            stat = os.stat(self.path)
            stamp = f" {stat.st_size} {stat.st_mtime_ns}".encode()
        except OSError:
            stamp = b" gone"
        salt = importlib.util.MAGIC_NUMBER + self._digest.encode() + stamp
        if suffix == ".sgs":
            salt += b" stubs " + lazy_code.FETCH.encode() + ",".join(self._lazy).encode()
        return Path(importlib.util.cache_from_source(self.path)).with_suffix(suffix), salt

    def _load_kept(self, suffix: str) -> CodeType | None:
        path, salt = self._kept(suffix)
        try:
            data = path.read_bytes()
            if _code_check(salt, memoryview(data)[32:]) == data[:32]:
                return marshal.loads(memoryview(data)[32:])
        except (OSError, ValueError, EOFError, TypeError):
            pass
        return None

    def _keep(self, suffix: str, code: CodeType) -> None:
        # Kept whatever sys.dont_write_bytecode says: PYTHONDONTWRITEBYTECODE (set in many
        # container images) keeps .pyc files out of source trees, and this is symgraph's own
        # cache folder, as Numba's cache is Numba's. Honouring it made every warm process
        # compile the module's text again (nbody@34, ~1,000 ops: 30 -> 220 ms of CPU).
        path, salt = self._kept(suffix)
        data = marshal.dumps(code)
        try:
            write_atomically(path, _code_check(salt, data) + data, sync=False)
        except OSError:  # only a faster next import lost
            pass

    def full_code(self) -> CodeType:
        """The module's bytecode, every function whole."""
        code = self._load_kept(".sgc")
        if code is None:
            code = compile(self.text().encode(), self.path, "exec", dont_inherit=True)
            self._keep(".sgc", code)
        return code

    def get_code(self, fullname: str) -> CodeType:
        if self._lazy:
            code = self._load_kept(".sgs")
            if code is not None:
                return code
        code = self.full_code()
        if self._lazy:  # (this import runs the whole code, already read; the next, stubs)
            self._keep(".sgs", lazy_code.stubbed(code, self._lazy))
        return code

    def exec_module(self, module: ModuleType) -> None:
        if self._lazy:
            module.__dict__[lazy_code.FETCH] = lazy_code.fetcher(module.__dict__, self.full_code)
        super().exec_module(module)

    def get_source(self, fullname: str) -> str:
        return self.text()


def _code_check(salt: bytes, data: bytes | memoryview) -> bytes:
    """The 32 bytes before kept bytecode: a SHA-256 of `salt` (the text's digest, the file's
    stamp and Python's bytecode version: another text's bytecode never matches) with the
    code's length and CRC-32 (a truncated or bit-flipped copy: the CRC finds every error
    burst of up to 32 bits, and misses other damage 1 time in 2^32). A SHA-256 of the whole
    code took 0.5-0.6 ms for each of a 1,000-operation function's two modules (~250 kB), the
    CRC ~0.1."""
    size = len(data).to_bytes(8, "little") + zlib.crc32(data).to_bytes(4, "little")
    return hashlib.sha256(salt + size).digest()
