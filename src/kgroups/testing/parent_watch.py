"""A test broker process that ends with the process that started it, however
that one ends (a clean exit, SIGTERM, SIGKILL of the test runner), leaving no
process, port or temporary directory behind.

The starter keeps the write end of a pipe whose read end the broker inherits
(``kgroups serve --parent-pipe FD``) and never writes to it: when the starter
is gone, whatever the cause, the kernel closes the write end and the broker
reads EOF. It then stops as on SIGTERM and removes ``--remove-on-parent-exit``
(its temporary directory). A second guard on Linux: the child asks the kernel
(``prctl(PR_SET_PDEATHSIG)``) for ``PARENT_DEATH_SIGNAL`` when its parent dies,
which still comes if a forked child of the test runner inherited the pipe's
write end and outlives it. The kernel sends that signal when the *thread* that
started the broker ends, too, so the broker acts on it only once its parent
process has changed (it was adopted). If its clean stop takes longer than
``STOP_DEADLINE_S``, it removes the directory and exits at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

PARENT_DEATH_SIGNAL = signal.SIGUSR1
STOP_DEADLINE_S = 20.0
_PR_SET_PDEATHSIG = 1


def signal_on_parent_death(parent_pid: int) -> None:
    """In a child between fork and exec (a ``preexec_fn``): have the kernel send
    ``PARENT_DEATH_SIGNAL`` when the parent dies (Linux; elsewhere nothing), and
    exit if the parent is already gone."""
    if sys.platform != "linux":
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, int(PARENT_DEATH_SIGNAL), 0, 0, 0)
    if os.getppid() != parent_pid:  # died before the request was in place
        os._exit(1)


class ParentWatch:
    """The broker's side: calls ``stop`` once the starter is gone; ``finish``
    removes the directory if so."""

    def __init__(self, pipe_fd: int, remove: Path | None) -> None:
        self._fd = pipe_fd
        self._remove = remove
        self._parent_pid = os.getppid()
        self._gone = threading.Event()

    def start(
        self,
        stop: Callable[[], object],
        on_signal: Callable[[int, Callable[[], None]], None] | None = None,
    ) -> None:
        """Watch from now on; ``stop`` may be called from another thread.
        ``on_signal(signum, callback)`` installs a signal handler (an event
        loop's ``add_signal_handler``; by default ``signal.signal``)."""

        def on_gone() -> None:
            if self._gone.is_set():
                return
            self._gone.set()
            stop()
            deadline = threading.Timer(STOP_DEADLINE_S, self._give_up)
            deadline.daemon = True
            deadline.start()

        def read_until_eof() -> None:
            with contextlib.suppress(OSError):
                while os.read(self._fd, 4096):
                    pass
            on_gone()

        def parent_died() -> None:
            if os.getppid() != self._parent_pid:  # not just the starting thread
                on_gone()

        if sys.platform == "linux":
            if on_signal is None:
                signal.signal(PARENT_DEATH_SIGNAL, lambda signum, frame: parent_died())
            else:
                on_signal(PARENT_DEATH_SIGNAL, parent_died)
            parent_died()
        threading.Thread(target=read_until_eof, name="parent-watch", daemon=True).start()

    @property
    def parent_gone(self) -> bool:
        return self._gone.is_set() or os.getppid() != self._parent_pid

    def finish(self) -> None:
        """After the broker stopped: remove the directory if the starter is gone."""
        if self.parent_gone and self._remove is not None:
            shutil.rmtree(self._remove, ignore_errors=True)

    def _give_up(self) -> None:
        if self._remove is not None:
            shutil.rmtree(self._remove, ignore_errors=True)
        os._exit(1)
