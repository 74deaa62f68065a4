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
import os
from pathlib import Path
from types import ModuleType

from ..backends.files import (  # noqa: F401  (where the runtime's callers find them)
    ENV_CACHE_DIR,
    default_cache_dir,
    import_file,
    write_atomically,
)


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:24]


def load_source(source: str, cache_dir: str | os.PathLike | None = None) -> tuple[ModuleType, Path]:
    """Import `source` as a module from ``<cache_dir>/sg_<digest>.py``; returns (module, path)."""
    digest = source_digest(source)
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / f"sg_{digest}.py"
    if not (path.is_file() and path.read_text(encoding="utf-8") == source):
        write_atomically(path, source)
    module = import_file(f"symgraph_generated_{digest}", path)
    module.__source__ = source
    return module, path
