"""A `kgroups serve` subprocess, for tests that kill the broker for real."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class BrokerProcess:
    def __init__(
        self,
        data: Path,
        port: int | None = None,
        *overrides: str,
        log_level: str | None = None,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        self.data = data
        self.log_level = log_level
        # Run in the child before the broker starts (e.g. to lower resource limits).
        self.preexec_fn = preexec_fn
        self.port = port or free_port()
        self.overrides = [
            f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
            f"log.dirs={data}",
            "group.initial.rebalance.delay.ms=0",
            "offsets.topic.num.partitions=5",
            *overrides,
        ]
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data.parent / f"{data.name}-broker.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30) -> BrokerProcess:
        args = [sys.executable, "-m", "kgroups", "serve"]
        for o in self.overrides:
            args += ["--override", o]
        if self.log_level is not None:
            args += ["--log-level", self.log_level]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, preexec_fn=self.preexec_fn
            )
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited: {self.log_path.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("broker did not start listening")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
