"""Where symgraph's generated files live, and how they are written and imported: the one copy
both the backends (the tape's generated interpreters) and the runtime (kernel modules, records)
use.

Files are written atomically (a temporary file, flushed to disk, then a rename, then the
folder flushed), so no reader ever sees part of one, not even after a power cut; they get the
modes the umask gives (0666 & ~umask), so a cache folder can be shared. Modules are imported
from their real path, so tracebacks, `inspect.getsource` and Numba's on-disk cache (keyed by
the file's path) work on them; compiles read a function's text from the text imported
(`source_of`), so a file changed or deleted after import still compiles as imported. Their
bytecode is kept with a check (`_CheckedLoader`: a digest of the text it was compiled from,
the code's length and CRC): a damaged copy is compiled again, never run.

A cache folder that cannot be written (read-only, another user's, a file in the way) gives
way to a private temporary folder, with a warning (`cache_folder`).
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
import warnings
import zlib
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from . import lazy_code

ENV_CACHE_DIR = "SYMGRAPH_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$SYMGRAPH_CACHE_DIR``, else the platform's user cache folder + ``symgraph``; a
    private temporary folder instead when that one cannot be written (`cache_folder`)."""
    if os.environ.get(ENV_CACHE_DIR):
        return cache_folder(Path(os.environ[ENV_CACHE_DIR]))
    try:
        home = Path.home()
    except (KeyError, RuntimeError):  # no HOME and no entry in the password database
        home = None
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or (home and home / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = home and home / "Library" / "Caches"
    else:
        base = os.environ.get("XDG_CACHE_HOME") or (home and home / ".cache")
    if not base:
        return cache_folder(None)
    return cache_folder(Path(base) / "symgraph")


_usable: dict[Path, Path] = {}  # folder asked for -> folder used (checked once a process)


def cache_folder(folder: Path | None) -> Path:
    """`folder` if files can be made in it (it is created if need be), else a private
    temporary folder, with a warning that says why (once per folder and process)."""
    if folder is not None and folder in _usable:
        return _usable[folder]
    reason = "no home folder" if folder is None else unwritable(folder)
    if reason is None:
        _usable[folder] = folder
        return folder
    fallback = temporary_folder()
    warnings.warn(f"symgraph: cannot use the cache folder {folder} ({reason}); using "
                  f"{fallback} (set {ENV_CACHE_DIR} to a writable folder to keep kernels "
                  "between runs)", RuntimeWarning, stacklevel=3)
    if folder is not None:
        _usable[folder] = fallback
    return fallback


def unwritable(folder: Path) -> str | None:
    """Why files cannot be made in `folder` (None: they can)."""
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):  # the one test that holds for root too
            pass
    except OSError as error:
        return error.strerror or type(error).__name__
    return None


def temporary_folder() -> Path:
    """``<tmp>/symgraph-<uid>``: made with mode 0700 and used only while this user owns it
    and no one else may write it (others could plant files there); else a new one."""
    import tempfile

    uid = os.getuid() if hasattr(os, "getuid") else 0
    folder = Path(tempfile.gettempdir()) / f"symgraph-{uid}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        status = folder.lstat()
        if (folder.is_dir() and not folder.is_symlink() and status.st_uid == uid
                and not status.st_mode & 0o022 and unwritable(folder) is None):
            return folder
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="symgraph-"))


def file_mode() -> int:
    """The mode a new file gets from the umask: 0666 & ~umask."""
    return 0o666 & ~_umask()


def _umask() -> int:
    try:  # Linux says it without changing it (setting and resetting it races other threads)
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomically(path: Path, data: str | bytes, mode: int | None = None,
                     sync: bool = True) -> None:
    """Write `data` (text as UTF-8) to `path` so that no reader ever sees a partial file, not
    even after a crash: the data reaches the disk before the rename, the rename before this
    returns (`sync=False`: not waited for; for files checked by a digest when read). The file
    gets `mode` (default: the umask's, `file_mode`). A folder in the way (a damaged cache) is
    removed."""
    import tempfile  # on use: importing it costs a warm start ~1 ms

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
            handle.flush()
            os.fchmod(handle.fileno(), file_mode() if mode is None else mode)
            if sync:
                os.fsync(handle.fileno())
        if path.is_dir() and not path.is_symlink():
            import shutil

            shutil.rmtree(path, ignore_errors=True)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    if sync:
        sync_folder(path.parent)


def sync_folder(folder: Path) -> None:
    """Flush `folder`'s entries (a rename into it) to disk, where the system allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # (some file systems refuse to flush a folder)
        pass
    finally:
        os.close(fd)


def read_text(path: Path) -> str | None:
    """The UTF-8 text of `path`, or None when it cannot be read as that (missing, a folder,
    not UTF-8)."""
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def import_file(name: str, path: Path, source: str | None = None,
                digest: str | None = None, lazy: tuple[str, ...] = ()) -> ModuleType:
    """The module `name` from `path`: the one already imported from there, else imported now
    (and registered in `sys.modules` only if its code ran to the end). `source`: the file's
    text, already read and checked by the caller; `digest`: its `source_digest`, when the
    caller has it (runtime.loading: the file's name). Under a lock: a module is in `sys.modules`
    while its code runs, and another thread compiling the same expression must not take it
    half made (``no attribute 'value_row'``)."""
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
        # Tracebacks read a function's lines through linecache: the text is there lazily (split
        # when first asked for a deleted file; 2 ms for a 1 MB module), and compiles read it
        # from the module (`source_of`), so a file changed or deleted after import compiles
        # as imported.
        linecache.cache[str(path)] = (lambda: source,)
        loader = _CheckedLoader(name, str(path), source, digest, lazy)
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


def source_of(function: Any) -> str:
    """The text of top-level function `function`: from the text its generated module was
    imported from (``__source__``, checked), not from the file, which may have changed since;
    `inspect.getsource` for any other function."""
    text = getattr(sys.modules.get(function.__module__), "__source__", None)
    if not isinstance(text, str):
        return inspect.getsource(function)
    lines = text.splitlines(keepends=True)
    return "".join(inspect.getblock(lines[function.__code__.co_firstlineno - 1:]))


def _unlock_in_child() -> None:  # a fork from another thread may have copied the lock held
    global _import_lock
    _import_lock = threading.RLock()
    _importing.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_unlock_in_child)


class _CheckedLoader(importlib.machinery.SourceFileLoader):
    """Imports a generated module from the text its caller checked; keeps its bytecode in
    ``__pycache__`` as a digest (of the text, Python's bytecode version and the code) and the
    code, and compiles the text again when the digest does not match (a truncated or
    bit-flipped copy: CPython's own .pyc carries no check of its contents). With `lazy`
    (name suffixes), the module is imported from a second kept copy whose functions of those
    names are stubs (backends.lazy_code), their code read from the first on their first call."""

    def __init__(self, name: str, path: str, source: str, digest: str | None = None,
                 lazy: tuple[str, ...] = ()) -> None:
        super().__init__(name, path)
        self._source = source  # (encoded only to hash or compile it: a 1 MB text, 0.2 ms)
        self._digest = digest  # the text's (24 hex digits of its sha256), if the caller has it
        self._lazy = lazy

    def _kept(self, suffix: str) -> tuple[Path, bytes]:
        # (the text's digest, as runtime.loading names files: one 1 MB module's hash, 0.7 ms,
        # not taken again when the caller has it)
        digest = self._digest or hashlib.sha256(self._source.encode()).hexdigest()[:24]
        salt = importlib.util.MAGIC_NUMBER + digest.encode()
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
        if not sys.dont_write_bytecode:
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
            code = compile(self._source.encode(), self.path, "exec", dont_inherit=True)
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
        return self._source


def _code_check(salt: bytes, data: bytes | memoryview) -> bytes:
    """The 32 bytes before kept bytecode: a SHA-256 of `salt` (the text's digest and Python's
    bytecode version: another text's bytecode never matches) with the code's length and
    CRC-32 (a truncated or bit-flipped copy: the CRC finds every error burst of up to 32 bits,
    and misses other damage 1 time in 2^32). A SHA-256 of the whole code took 0.5-0.6 ms for
    each of a 1,000-operation function's two modules (~250 kB), the CRC ~0.1."""
    size = len(data).to_bytes(8, "little") + zlib.crc32(data).to_bytes(4, "little")
    return hashlib.sha256(salt + size).digest()
