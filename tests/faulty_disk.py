"""A disk that fails on demand, for tests.

``FaultyDisk`` wraps the ``os`` calls the storage layer makes (write, fsync,
fdatasync, ftruncate, open, dup) and makes those on files under one directory fail
with a chosen errno; everything else (sockets, other files) is left alone, so an
in-process broker keeps serving. It also records which directories were fsynced.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CALLS = ("write", "fsync", "fdatasync", "ftruncate", "open", "dup")


@dataclass
class Fault:
    call: str
    error: int
    name_contains: str
    remaining: int | None  # None: until healed


class FaultyDisk:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
        self.root = str(root.resolve())
        self.faults: list[Fault] = []
        self.synced_directories: list[Path] = []
        self.injected = 0
        self._held: set[str] = set()
        self._release = threading.Event()
        self._real = {name: getattr(os, name) for name in CALLS}
        for name in CALLS:
            monkeypatch.setattr(os, name, self._wrap(name))

    def fail(
        self,
        call: str,
        error: int = errno.ENOSPC,
        *,
        name_contains: str = "",
        times: int | None = 1,
    ) -> None:
        """Make the next ``times`` (None: all) ``call``s on files whose path (below the
        root) contains ``name_contains`` fail."""
        assert call in CALLS
        self.faults.append(Fault(call, error, name_contains, times))

    def heal(self) -> None:
        self.faults.clear()

    def hold(self, call: str) -> None:
        """Make ``call``s on matching files wait until ``release()``."""
        self._release.clear()
        self._held.add(call)

    def release(self) -> None:
        self._held.clear()
        self._release.set()

    def _path_of(self, call: str, args: tuple[Any, ...]) -> str | None:
        if call == "open":
            return os.fspath(args[0])
        try:
            return os.readlink(f"/proc/self/fd/{args[0]}")
        except OSError:
            return None

    def _wrap(self, call: str) -> Callable[..., Any]:
        real = self._real[call]

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            path = self._path_of(call, args)
            if path is not None and path.startswith(self.root):
                for fault in self.faults:
                    if fault.call == call and fault.name_contains in path[len(self.root) :]:
                        if fault.remaining is not None:
                            fault.remaining -= 1
                            if fault.remaining == 0:
                                self.faults.remove(fault)
                        self.injected += 1
                        raise OSError(fault.error, os.strerror(fault.error), path)
                if call in self._held:
                    self._release.wait(30)
                if call == "fsync" and os.path.isdir(path):
                    self.synced_directories.append(Path(path))
            return real(*args, **kwargs)

        return wrapper


ENOSPC = errno.ENOSPC
EIO = errno.EIO
EROFS = errno.EROFS
EMFILE = errno.EMFILE
