"""Where symgraph's generated files live, and how they are written and imported: the one copy
both the backends (the tape's generated interpreters) and the runtime (kernel modules, records)
use.

Files are written atomically (a temporary file, then a rename), so no reader ever sees part of
one; modules are imported from their real path, so tracebacks, `inspect.getsource` and Numba's
on-disk cache (keyed by the file's path) work on them.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from pathlib import Path
from types import ModuleType

ENV_CACHE_DIR = "SYMGRAPH_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$SYMGRAPH_CACHE_DIR``, else the platform's user cache folder + ``symgraph``."""
    if os.environ.get(ENV_CACHE_DIR):
        return Path(os.environ[ENV_CACHE_DIR])
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "symgraph"


def write_atomically(path: Path, data: str | bytes) -> None:
    """Write `data` (text as UTF-8) to `path` so that no reader ever sees a partial file."""
    import tempfile  # on use: importing it costs a warm start ~1 ms

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def import_file(name: str, path: Path) -> ModuleType:
    """The module `name` from `path`: the one already imported from there, else imported now
    (and registered in `sys.modules` only if its code ran to the end). Under a lock: a module
    is in `sys.modules` while its code runs, and another thread compiling the same expression
    must not take it half made (``no attribute 'value_row'``)."""
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__file__", None) == str(path) and (
            name not in _importing):
        return module
    with _import_lock:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None) == str(path):
            return module
        spec = importlib.util.spec_from_file_location(name, path)
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
