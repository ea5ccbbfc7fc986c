"""Fetch responses stay within the request's and the broker's byte limits,
except for the one whole batch KIP-74 lets through so consumers progress."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

from kgroups.errors import ErrorCode
from kgroups.protocol.types import BrokerId, TopicName, i8, i32, i64
from kgroups.records.batch import iter_batches

from broker_thread import BrokerThread
from raw_wire import call

PARTITIONS = 20
BATCH_VALUE = 200_000
BATCHES = 3


def _fill(b: BrokerThread) -> None:
    assert b.broker is not None
    broker = b.broker

    def fill() -> None:
        broker.create_topic("big", PARTITIONS, {})
        for p in range(PARTITIONS):
            log = broker.partitions.log("big", p)
            for _ in range(BATCHES):
                log.append_records([(b"k", os.urandom(BATCH_VALUE), (), 1)], 0)

    b.call(fill)


@pytest.fixture
def big_topic(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data").start()
    try:
        _fill(b)
        yield b
    finally:
        b.stop()


def _fetch(port: int, max_bytes: int, partition_max_bytes: int) -> tuple[FetchRequest, int]:
    request = FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=timedelta(0),
        min_bytes=i32(1),
        max_bytes=i32(max_bytes),
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
                        partition_max_bytes=i32(partition_max_bytes),
                    )
                    for p in range(PARTITIONS)
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )
    with socket.create_connection(("127.0.0.1", port), 10) as s:
        response, size = call(s, request)
    return response, size


def _batches_per_partition(response: object) -> list[int]:
    partitions = response.responses[0].partitions  # type: ignore[attr-defined]
    assert all(p.error_code == ErrorCode.none for p in partitions)
    return [len(list(iter_batches(p.records or b""))) for p in partitions]


def test_tiny_max_bytes_still_returns_the_first_batch_whole(big_topic: BrokerThread) -> None:
    assert big_topic.broker is not None
    response, size = _fetch(big_topic.broker.port, 1, 1)
    assert _batches_per_partition(response) == [1] + [0] * (PARTITIONS - 1)
    assert size < BATCH_VALUE + 4096


def test_partition_max_bytes_bounds_every_partition_after_the_first(
    big_topic: BrokerThread,
) -> None:
    assert big_topic.broker is not None
    response, size = _fetch(big_topic.broker.port, 2**31 - 1, 1)
    assert _batches_per_partition(response) == [1] + [0] * (PARTITIONS - 1)
    assert size < BATCH_VALUE + 4096


def test_broker_fetch_max_bytes_caps_the_request(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data", fetch_max_bytes=450_000).start()
    try:
        _fill(b)
        assert b.broker is not None
        response, size = _fetch(b.broker.port, 2**31 - 1, 2**31 - 1)
        # Two whole batches fit in 450 kB; the third would not.
        assert _batches_per_partition(response) == [2] + [0] * (PARTITIONS - 1)
        assert size < 450_000
    finally:
        b.stop()
