"""Making changes to the file system survive a power loss.

Data reaches the disk with an fsync of the file; a file's name (created,
renamed or removed) reaches it only with an fsync of its directory. Small
state files are replaced whole: written to a temporary file, fsynced, renamed
over the old one, then the directory is fsynced, so a crash leaves either the
old contents or the new, never half of either.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = ["fsync_directory", "replace_file"]

_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def fsync_directory(directory: Path) -> None:
    """Make the entries of ``directory`` (new, renamed, removed names) durable."""
    fd = os.open(directory, _DIRECTORY_FLAGS)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise  # EINVAL/ENOTSUP: a file system without directory fsync
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_directory(path.parent)
