"""Temporary data directories of test brokers, swept once their process is gone.

``EmbeddedBroker.stop()`` removes the temporary directory it made, and a
process broker removes its own when the process that started it dies
(parent_watch.py); a thread broker dies with a SIGKILLed test runner and
leaves its directory. So every temporary directory a process makes is under a
parent of its own, named after its pid, and the first one made by a later
process removes the parents whose process no longer exists. (A pid reused
meanwhile keeps its dead predecessor's parent until it ends too.)
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from pathlib import Path

OWNER_PREFIX = "kgroups-pid"

# (pid, parent): a forked child makes a parent of its own.
_parent: tuple[int, Path] | None = None


def new_data_root() -> Path:
    """A new empty directory for one broker's data, under this process's parent."""
    global _parent
    pid = os.getpid()
    if _parent is None or _parent[0] != pid or not _parent[1].is_dir():
        sweep_orphans()
        parent = Path(tempfile.mkdtemp(prefix=f"{OWNER_PREFIX}{pid}-"))
        atexit.register(_remove_if_empty, parent)
        _parent = (pid, parent)
    return Path(tempfile.mkdtemp(prefix="kgroups-", dir=_parent[1]))


def sweep_orphans(where: Path | None = None) -> None:
    """Remove the parents left by processes that no longer exist."""
    root = Path(tempfile.gettempdir()) if where is None else where
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            owner = _owner(entry.name)
            if owner is not None and not _alive(owner) and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)


def _owner(name: str) -> int | None:
    if not name.startswith(OWNER_PREFIX):
        return None
    pid, _, _ = name[len(OWNER_PREFIX) :].partition("-")
    return int(pid) if pid.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _remove_if_empty(parent: Path) -> None:
    with contextlib.suppress(OSError):
        parent.rmdir()
