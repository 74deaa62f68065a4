"""Writing a command's output to ``-o FILE``, as a careful ``>`` would.

A regular file (new, or there already) is replaced atomically: a failure leaves the old one
whole, never half a file. The new file keeps the old one's modes (and, for root, its owner);
a new one gets the umask's (0666 & ~umask). A symbolic link is followed: its target is
written and the link stays. Anything else that is not a regular file (a FIFO, a device such
as /dev/null or /dev/stdout, a socket) is written through, never replaced: as root, replacing
/dev/null would break the whole system. A read-only file is refused, with the reason.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..backends.files import write_atomically
from .input import Failure


def write_output(path: str | os.PathLike, data: str | bytes) -> None:
    """Write `data` (text as UTF-8) to the file `path` names (see the module's text)."""
    named = Path(path)
    data = data.encode() if isinstance(data, str) else data
    target = Path(os.path.realpath(named))  # a link's target (the link itself stays)
    try:
        status = os.stat(target)
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise Failure(f"cannot write {named}: {error.strerror or error}") from None
    try:
        if status is not None and stat.S_ISDIR(status.st_mode):
            raise Failure(f"cannot write {named}: it is a folder")
        if status is not None and not stat.S_ISREG(status.st_mode):
            with open(target, "wb") as stream:  # a FIFO, a device, a socket: through it
                stream.write(data)
            return
        if status is not None and (not status.st_mode & 0o222
                                   or not os.access(target, os.W_OK)):
            raise Failure(f"cannot write {named}: it is read-only (not replaced)")
        write_atomically(target, data, None if status is None else stat.S_IMODE(status.st_mode))
    except OSError as error:  # named by the file asked for, never the temporary one
        raise Failure(f"cannot write {named}: {error.strerror or error}") from None
    if status is not None and hasattr(os, "chown") and os.geteuid() == 0:
        try:  # root rewriting someone's file leaves it theirs
            os.chown(target, status.st_uid, status.st_gid)
        except OSError:
            pass
