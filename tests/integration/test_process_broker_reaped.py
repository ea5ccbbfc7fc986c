"""A process-mode EmbeddedBroker ends with the process that started it, however
that one ends: no broker process, listening port or temporary directory is
left behind when a test runner is killed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kgroups.testing import EmbeddedBroker

# Starts a broker, says where it is, and waits to be killed.
STARTER = textwrap.dedent(
    """
    import json, sys, time
    from kgroups.testing import EmbeddedBroker

    broker = EmbeddedBroker(process=True)
    print(json.dumps({
        "pid": broker._impl.proc.pid,
        "port": broker.port,
        "dir": str(broker.data_dir.parent),
    }), flush=True)
    time.sleep(600)
    """
)
BOUND_S = 60


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
    except OSError:
        return False
    return True


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_the_broker_goes_with_its_starter(how: signal.Signals) -> None:
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert starter.stdout is not None
        where = json.loads(starter.stdout.readline())
        pid, port, data = where["pid"], where["port"], Path(where["dir"])
        assert _alive(pid) and _listening(port) and data.is_dir()
    finally:
        starter.send_signal(how)
        starter.wait(30)

    deadline = time.monotonic() + BOUND_S
    while _alive(pid) or _listening(port) or data.exists():
        assert time.monotonic() < deadline, (_alive(pid), _listening(port), data.exists())
        time.sleep(0.1)


def test_a_broker_killed_and_restarted_by_its_starter_keeps_running() -> None:
    """The watch is of the starting process, not of each broker run."""
    with EmbeddedBroker(process=True) as broker:
        broker.kill()
        broker.restart()
        assert _listening(broker.port) and broker.data_dir.is_dir()
