"""A Fetch over a plaintext connection sends its records from the segment files
(os.sendfile): what the client receives is byte for byte what the log holds,
also when the client reads slowly, on asyncio's loop and on uvloop's (the one
`kgroups serve` runs on); the next answer follows it whole; and a response whose
files are deleted before it could be sent closes the connection instead of
sending a wrong frame."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import uvloop
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.delete_topics.v6 import DeleteTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import BrokerId, TopicName, i8, i32, i64
from kgroups.testing.thread_broker import ThreadBroker

from raw_wire import call_once, decode_response, encode_request, read_frame

PARTITIONS = 3
BATCHES = 3
BATCH_VALUE = 1_000_000
# Small enough that the broker's writes find the socket full.
CLIENT_RECEIVE_BUFFER = 16 * 1024

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


@pytest.fixture(params=sorted(LOOPS))
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ThreadBroker]:
    b = ThreadBroker(tmp_path / "data", loop_factory=LOOPS[request.param]).start()
    try:
        assert b.broker is not None
        broker = b.broker

        def fill() -> None:
            broker.create_topic("big", PARTITIONS, {})
            for p in range(PARTITIONS):
                log = broker.partitions.log("big", p)
                for _ in range(BATCHES):
                    log.append_records([(b"k", os.urandom(BATCH_VALUE), (), 1)], 0)

        b.call(fill)
        yield b
    finally:
        b.stop()


def _fetch_request() -> FetchRequest:
    return FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=timedelta(0),
        min_bytes=i32(1),
        max_bytes=i32(50 * 1024 * 1024),
        isolation_level=i8(0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            FetchTopic(
                topic=TopicName("big"),
                partitions=tuple(
                    FetchPartition(
                        partition=i32(p),
                        current_leader_epoch=i32(-1),
                        fetch_offset=i64(0),
                        last_fetched_epoch=i32(-1),
                        log_start_offset=i64(-1),
                        partition_max_bytes=i32(10 * 1024 * 1024),
                    )
                    for p in range(PARTITIONS)
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def _slow_reader(port: int) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, CLIENT_RECEIVE_BUFFER)
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    return s


def _logged(b: ThreadBroker) -> list[bytes]:
    """Each partition's batches, as the log reads them into memory."""
    assert b.broker is not None
    broker = b.broker
    return b.call(
        lambda: [broker.partitions.log("big", p).read(0, 1 << 30) for p in range(PARTITIONS)]
    )


def test_records_come_from_the_files_whole_and_in_order(broker: ThreadBroker) -> None:
    fetch = _fetch_request()
    versions = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    with _slow_reader(broker.port) as s:
        # Two requests at once: the second answer must follow the first whole.
        s.sendall(encode_request(fetch, 1) + encode_request(versions, 2))
        time.sleep(0.5)  # the broker fills the socket and waits for room
        first = read_frame(s)
        second = read_frame(s)
    assert int.from_bytes(first[:4], "big") == 1
    assert int.from_bytes(second[:4], "big") == 2
    response = decode_response(FetchRequest, first)
    assert response.error_code == ErrorCode.none
    (topic,) = response.responses
    got = [p.records for p in sorted(topic.partitions, key=lambda p: p.partition_index)]
    assert all(p.error_code == ErrorCode.none for p in topic.partitions)
    assert [len(r) for r in got] == [len(r) for r in _logged(broker)]
    assert got == _logged(broker)
    assert decode_response(ApiVersionsRequest, second).error_code == ErrorCode.none


def test_files_deleted_before_they_are_sent_close_the_connection(broker: ThreadBroker) -> None:
    with _slow_reader(broker.port) as s:
        s.sendall(encode_request(_fetch_request(), 1))
        time.sleep(0.5)  # the answer waits for room in the socket
        deleted = call_once(
            broker.port,
            DeleteTopicsRequest(
                topics=(DeleteTopicState(name=TopicName("big"), topic_id=None),),
                timeout=i32Timedelta.parse(timedelta(seconds=10)),
            ),
            timeout=20,
        )
        assert [r.error_code for r in deleted.responses] == [ErrorCode.none]
        received = 0
        with pytest.raises(ConnectionError):
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    raise ConnectionError("closed")
                received += len(chunk)
        # Closed before the whole frame was there: never a complete wrong frame.
        assert received < PARTITIONS * BATCHES * BATCH_VALUE
    # The broker serves on.
    with socket.create_connection(("127.0.0.1", broker.port), 10) as s:
        versions = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        s.sendall(encode_request(versions, 3))
        assert decode_response(ApiVersionsRequest, read_frame(s)).error_code == ErrorCode.none
