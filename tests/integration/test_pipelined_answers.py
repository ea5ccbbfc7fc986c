"""Pipelined requests on one connection: answered in request order, and an
answer never waits for a later request that is still waiting."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from kio.schema.api_versions.v0.request import ApiVersionsRequest
from kio.schema.join_group.v0.request import JoinGroupRequest, JoinGroupRequestProtocol

from kgroups.protocol.types import GroupId

from broker_thread import BrokerThread
from raw_wire import encode_request, read_frame

_JOIN_DELAY_S = 4


def _correlation(frame: bytes) -> int:
    (correlation,) = struct.unpack_from(">i", frame)
    return correlation


@pytest.fixture
def slow_join_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """A broker whose first JoinGroup of a group waits the initial rebalance delay."""
    b = BrokerThread(
        tmp_path / "data", group_initial_rebalance_delay_ms=_JOIN_DELAY_S * 1000
    ).start()
    try:
        yield b
    finally:
        b.stop()


def test_pipelined_requests_are_answered_in_request_order(broker: BrokerThread) -> None:
    assert broker.broker is not None
    count = 500
    requests = b"".join(encode_request(ApiVersionsRequest(), c) for c in range(count))
    with socket.create_connection(("127.0.0.1", broker.broker.port), 10) as s:
        s.settimeout(10)
        s.sendall(requests)
        assert [_correlation(read_frame(s)) for _ in range(count)] == list(range(count))


def test_an_answer_does_not_wait_for_a_later_waiting_request(
    slow_join_broker: BrokerThread,
) -> None:
    assert slow_join_broker.broker is not None
    join = JoinGroupRequest(
        group_id=GroupId("pipelined"),
        session_timeout=timedelta(seconds=10),
        member_id="",
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00"),),
    )
    requests = (
        encode_request(ApiVersionsRequest(), 1)
        + encode_request(join, 2)
        + encode_request(ApiVersionsRequest(), 3)
    )
    with socket.create_connection(("127.0.0.1", slow_join_broker.broker.port), 10) as s:
        s.settimeout(3 * _JOIN_DELAY_S)
        sent = time.monotonic()
        s.sendall(requests)
        assert _correlation(read_frame(s)) == 1
        assert time.monotonic() - sent < _JOIN_DELAY_S / 2
        # The join completes after its delay; the request behind it waits for it.
        assert [_correlation(read_frame(s)) for _ in range(2)] == [2, 3]
