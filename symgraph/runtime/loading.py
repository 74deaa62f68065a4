"""Compile generated source from real files in a cache folder, keyed by the source's digest.

Files are written atomically (temporary file + rename) and never rewritten once present, so a
second process finds the same file, imports it, and Numba's own on-disk cache (which is keyed by
the file's path and timestamp) gives back the machine code without compiling again.
Real files also make tracebacks, `inspect.getsource` and debuggers work on generated code.
A Numba module's text names the digest of symgraph's Numba runtime, which its machine code
holds too, so another runtime gives another file (`backends.numba.cache.runtime_digest`).
A backend's `load` then makes the module's kernels ready (Numba: their cached machine code).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
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


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:24]


def write_atomically(path: Path, data: str | bytes) -> None:
    """Write `data` (text as UTF-8) to `path` so that no reader ever sees a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load_source(source: str, cache_dir: str | os.PathLike | None = None) -> tuple[ModuleType, Path]:
    """Import `source` as a module from ``<cache_dir>/sg_<digest>.py``; returns (module, path)."""
    digest = source_digest(source)
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / f"sg_{digest}.py"
    if not (path.is_file() and path.read_text(encoding="utf-8") == source):
        write_atomically(path, source)
    name = f"symgraph_generated_{digest}"
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__file__", None) == str(path):
        return module, path
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    module.__source__ = source
    return module, path
