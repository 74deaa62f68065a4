"""Compile generated source from real files in a cache folder, keyed by the source's digest.

Files are written atomically (temporary file + rename) and never rewritten once present, so a
second process finds the same file, imports it, and Numba's own on-disk cache (which is keyed by
the file's path and timestamp) gives back the machine code without compiling again. A file
whose text is not the source it is named for (edited, truncated, bit-flipped, not UTF-8, a
folder) is written again before it is imported: nothing runs that does not match its digest.
A file kept from an earlier process is imported from its kept bytecode (`load_kept`: checked
against its name and the file's stamp), its text read and checked only when needed. Real
files also make tracebacks, `inspect.getsource` and debuggers work on generated code.
A Numba module's text names the digest of symgraph's Numba runtime, which its machine code
holds too, so another runtime gives another file (`backends.numba.cache.runtime_digest`).
A backend's `load` then makes the module's kernels ready (Numba: their cached machine code).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from ..backends.files import (  # noqa: F401  (where the runtime's callers find them)
    ENV_CACHE_DIR,
    cache_folder,
    default_cache_dir,
    read_text,
    temporary_folder,
    write_atomically,
)
from ..backends.imports import import_file
from ..backends.numba.cache_files import folders_checked_once


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:24]


def module_name(source: str) -> str:
    """The file name `load_source` keeps `source` under: ``sg_<digest>.py``."""
    return f"sg_{source_digest(source)}.py"


def kept_source(folder: Path, name: object) -> str | None:
    """The text of the generated module file `name` in `folder` if it is the text its name
    is the digest of (None otherwise: missing, damaged, edited, or not such a name)."""
    if not (isinstance(name, str) and name.startswith("sg_") and name.endswith(".py")):
        return None
    text = read_text(folder / name)
    return text if text is not None and module_name(text) == name else None


def cache_dir_of(cache_dir: str | os.PathLike | None) -> Path:
    """The folder generated files go to: `cache_dir`, else the default, either replaced by a
    temporary folder (with a warning) when it cannot be written."""
    return cache_folder(Path(cache_dir)) if cache_dir is not None else default_cache_dir()


def load_source(source: str, cache_dir: str | os.PathLike | None = None, *,
                sync: bool = True, lazy: tuple[str, ...] = ()) -> tuple[ModuleType, Path]:
    """Import `source` as a module from ``<cache_dir>/sg_<digest>.py``; returns (module, path).
    `sync=False`: the file's write is not waited for (its text is checked on every load).
    `lazy`: suffixes of the names of functions whose bytecode is read on their first call
    (backends.lazy_code; the backend's `lazy_bodies`)."""
    digest = source_digest(source)
    path = cache_dir_of(cache_dir) / f"sg_{digest}.py"
    if read_text(path) != source:
        try:
            write_atomically(path, source, sync=sync)
        except OSError as error:  # a full disk, say: a private temporary folder if it works
            fallback = temporary_folder() / path.name
            if fallback == path:
                raise
            warnings.warn(f"symgraph: cannot write {path} ({error.strerror or error}); "
                          f"using {fallback}", RuntimeWarning, stacklevel=2)
            path = fallback
            if read_text(path) != source:
                write_atomically(path, source)
    with folders_checked_once():  # (a Numba module's cache=True kernels)
        module = import_file(f"symgraph_generated_{digest}", path, source, digest, lazy)
    return module, path


def kept_file(folder: Path, name: object) -> bool:
    """Whether `name` is a generated module's file name (``sg_<digest>.py``) with a file in
    `folder` (its text unread: `load_kept`)."""
    return (isinstance(name, str) and name.startswith("sg_") and name.endswith(".py")
            and (folder / name).is_file())


def load_kept(folder: Path, name: str, render: Callable[[], str], *,
              lazy: tuple[str, ...] = ()) -> tuple[ModuleType, Path]:
    """Import the generated module file `name` in `folder` (`kept_file`) as `load_source`
    would, without reading its text while its kept bytecode matches: the text is read and
    checked when first needed (a compile, `imports.text_of`), and written again from
    `render()` (which must give the text `name` is the digest of) if it is not that text.
    A 1,000-operation Numba module's text and digest cost a warm process 1-2 ms."""
    path = folder / name

    def text() -> str:
        kept = kept_source(folder, name)
        if kept is None:  # damaged since: made again, as `load_source` would have
            kept = render()
            if module_name(kept) != name:
                raise RuntimeError(f"symgraph: cannot make {path} again (rendered as "
                                   f"{module_name(kept)})")
            write_atomically(path, kept)
        return kept

    with folders_checked_once():
        module = import_file(f"symgraph_generated_{name[3:-3]}", path, text, name[3:-3], lazy)
    return module, path
