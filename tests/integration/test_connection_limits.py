"""Connections cost the broker a socket each: idle ones (half-sent frames
included) are closed after connections.max.idle.ms, and max.connections and
max.connections.per.ip cap how many a peer may hold."""

from __future__ import annotations

import resource
import socket
import struct
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from kio.schema.api_versions.v0 import ApiVersionsRequest

from kgroups.errors import ErrorCode

from broker_thread import BrokerThread
from raw_wire import call


def _start(tmp_path: Path, **overrides: object) -> BrokerThread:
    return BrokerThread(tmp_path / "data", **overrides).start()


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as s:
        yield s


def _connect(b: BrokerThread) -> socket.socket:
    assert b.broker is not None
    s = socket.create_connection(("127.0.0.1", b.broker.port), 10)
    s.settimeout(10)
    return s


def _served(s: socket.socket) -> bool:
    try:
        response, _ = call(s, ApiVersionsRequest())
    except OSError:
        return False
    return bool(response.error_code == ErrorCode.none)


def _closed_by_broker(s: socket.socket, within: float) -> bool:
    s.settimeout(within)
    try:
        return s.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def test_idle_and_half_sent_connections_are_closed(tmp_path: Path, stack: ExitStack) -> None:
    b = _start(tmp_path, connections_max_idle_ms=300)
    stack.callback(b.stop)
    idle, half_sent, busy = (stack.enter_context(_connect(b)) for _ in range(3))
    assert _served(idle)
    half_sent.sendall(struct.pack(">i", 100) + b"abc")
    # A connection that keeps making requests stays open.
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        assert _served(busy)
        time.sleep(0.05)
    assert _closed_by_broker(idle, 5)
    assert _closed_by_broker(half_sent, 5)
    assert _served(stack.enter_context(_connect(b)))


def test_connections_stay_open_without_an_idle_limit_reached(
    tmp_path: Path, stack: ExitStack
) -> None:
    b = _start(tmp_path)
    stack.callback(b.stop)
    s = stack.enter_context(_connect(b))
    assert _served(s)
    assert not _closed_by_broker(s, 1.0)
    s.settimeout(10)
    assert _served(s)


def test_per_ip_cap_closes_new_connections_at_once(tmp_path: Path, stack: ExitStack) -> None:
    b = _start(tmp_path, max_connections_per_ip=3)
    stack.callback(b.stop)
    held = [stack.enter_context(_connect(b)) for _ in range(3)]
    assert all(_served(s) for s in held)
    extra = stack.enter_context(_connect(b))
    assert _closed_by_broker(extra, 5)
    # A slot freed is a slot usable again.
    held.pop().close()
    deadline = time.monotonic() + 5
    while True:
        s = stack.enter_context(_connect(b))
        if _served(s):
            break
        assert time.monotonic() < deadline, "the freed slot never became usable"
        time.sleep(0.05)


def test_per_ip_override_and_broker_wide_cap(tmp_path: Path, stack: ExitStack) -> None:
    b = _start(tmp_path, max_connections_per_ip=1, max_connections_per_ip_overrides="127.0.0.1:2")
    stack.callback(b.stop)
    two = [stack.enter_context(_connect(b)) for _ in range(2)]
    assert all(_served(s) for s in two)
    assert _closed_by_broker(stack.enter_context(_connect(b)), 5)

    c = _start(tmp_path / "other", max_connections=2)
    stack.callback(c.stop)
    two = [stack.enter_context(_connect(c)) for _ in range(2)]
    assert all(_served(s) for s in two)
    assert _closed_by_broker(stack.enter_context(_connect(c)), 5)


SLOWLORIS = 2000


def _raise_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"needs {needed} file descriptors; RLIMIT_NOFILE hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def test_slowloris_does_not_starve_a_normal_client(tmp_path: Path, stack: ExitStack) -> None:
    # The broker runs in this process: one descriptor per side of each socket.
    _raise_fd_limit(2 * SLOWLORIS + 512)
    b = _start(tmp_path, connections_max_idle_ms=2000)
    stack.callback(b.stop)
    partial = []
    for _ in range(SLOWLORIS):
        s = stack.enter_context(_connect(b))
        s.sendall(b"\x00\x00\x01")  # three bytes of a size prefix
        partial.append(s)
    started = time.monotonic()
    assert _served(stack.enter_context(_connect(b)))
    assert time.monotonic() - started < 2.0
    # Then the half-sent connections are let go.
    assert all(_closed_by_broker(s, 10) for s in partial)
