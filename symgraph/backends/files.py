"""Where symgraph's generated files live, and how they are written: the one copy both the
backends (the tape's generated interpreters) and the runtime (kernel modules, records) use
(backends.imports imports them).

Files are written atomically (a temporary file, flushed to disk, then a rename, then the
folder flushed), so no reader ever sees part of one, not even after a power cut; they get the
modes the umask gives (0666 & ~umask), so a cache folder can be shared.

A cache folder that cannot be written (read-only, another user's, a file in the way) gives
way to a private temporary folder, with a warning (`cache_folder`).
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

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
