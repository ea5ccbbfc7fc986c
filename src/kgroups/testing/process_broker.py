"""A `kgroups serve` subprocess, for tests that kill the broker for real.

It ends with the process that started it, however that one ends
(kgroups.testing.parent_watch): the broker holds the read end of a pipe whose
write end only this process has.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from kgroups.testing.defaults import broker_properties
from kgroups.testing.parent_watch import signal_on_parent_death


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ProcessBroker:
    def __init__(
        self,
        data: Path,
        overrides: Mapping[str, str] | None = None,
        port: int | None = None,
        log_level: str | None = None,
        preexec_fn: Callable[[], None] | None = None,
        remove_on_parent_exit: Path | None = None,
    ) -> None:
        """``remove_on_parent_exit``: a directory the broker removes if this
        process ends without stopping it (its temporary directory)."""
        self.data = data
        self.remove_on_parent_exit = remove_on_parent_exit
        self._parent_pipe: int | None = None
        self.port = port or free_port()
        self.properties = broker_properties(data, self.port, overrides or {})
        self.log_level = log_level
        # Run in the child before the broker starts (e.g. to lower resource limits).
        self.preexec_fn = preexec_fn
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data.parent / f"{data.name}-broker.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def fault_admin_url(self) -> str | None:
        port = self.properties.get("fault.admin.port", "-1")
        return None if int(port) < 0 else f"http://127.0.0.1:{port}"

    def start(self, timeout: float = 30) -> ProcessBroker:
        args = [sys.executable, "-m", "kgroups", "serve"]
        for key, value in self.properties.items():
            args += ["--override", f"{key}={value}"]
        if self.log_level is not None:
            args += ["--log-level", self.log_level]
        self._close_pipe()
        read_end, self._parent_pipe = os.pipe()
        args += ["--parent-pipe", str(read_end)]
        if self.remove_on_parent_exit is not None:
            args += ["--remove-on-parent-exit", str(self.remove_on_parent_exit)]
        parent_pid = os.getpid()
        extra_preexec = self.preexec_fn

        def preexec() -> None:
            signal_on_parent_death(parent_pid)
            if extra_preexec is not None:
                extra_preexec()

        try:
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    args,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=(read_end,),
                    preexec_fn=preexec,
                )
        finally:
            os.close(read_end)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited: {self.log_path.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return self
            except OSError:
                time.sleep(0.02)
        self.kill()
        raise RuntimeError("broker did not start listening")

    def kill(self) -> None:
        """kill -9: no flush, no clean shutdown; what is on disk is what survives."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self._close_pipe()

    def terminate(self) -> int:
        """SIGTERM: a clean shutdown; returns the exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        status = self.proc.wait(30)
        self._close_pipe()
        return status

    def _close_pipe(self) -> None:
        if self._parent_pipe is not None:
            os.close(self._parent_pipe)
            self._parent_pipe = None

    def restart(self) -> ProcessBroker:
        """Stop the broker cleanly if it runs, then start it on the same port and data."""
        if self.proc is not None:
            self.terminate()
        return self.start()

    def stop(self) -> None:
        self.kill()
