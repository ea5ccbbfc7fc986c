"""A Fetch naming a partition more than once: Kafka reads the request into a
map keyed by partition, so the partition is answered once (with what its last
mention asks, in the place of its first), and the response stays within
fetch.max.bytes but for one first batch (KIP-74)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

from kgroups.errors import ErrorCode
from kgroups.protocol.types import BrokerId, TopicName, i8, i32, i64
from kgroups.records.batch import iter_batches

from broker_thread import BrokerThread
from raw_wire import call

BATCH_VALUE = 200_000
BATCHES = 3
MAX_BYTES = 450_000  # two whole batches fit, the third does not


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", fetch_max_bytes=MAX_BYTES).start()
    try:
        assert b.broker is not None
        broker = b.broker

        def fill() -> None:
            for topic in ("a", "b"):
                broker.create_topic(topic, 2, {})
                for p in range(2):
                    log = broker.partitions.log(topic, p)
                    for _ in range(BATCHES):
                        log.append_records([(b"k", os.urandom(BATCH_VALUE), (), 1)], 0)

        b.call(fill)
        yield b
    finally:
        b.stop()


def _partition(index: int, offset: int = 0, max_bytes: int = 2**31 - 1) -> FetchPartition:
    return FetchPartition(
        partition=i32(index),
        current_leader_epoch=i32(-1),
        fetch_offset=i64(offset),
        last_fetched_epoch=i32(-1),
        log_start_offset=i64(-1),
        partition_max_bytes=i32(max_bytes),
    )


def _fetch(b: BrokerThread, *topics: FetchTopic) -> tuple[Any, int]:
    assert b.broker is not None
    request = FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=timedelta(0),
        min_bytes=i32(1),
        max_bytes=i32(2**31 - 1),
        isolation_level=i8(0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=topics,
        forgotten_topics_data=(),
        rack_id="",
    )
    with socket.create_connection(("127.0.0.1", b.broker.port), 10) as s:
        return call(s, request)


def _topic(name: str, *partitions: FetchPartition) -> FetchTopic:
    return FetchTopic(topic=TopicName(name), partitions=partitions)


def _answered(response: Any) -> list[tuple[str, list[tuple[int, int]]]]:
    """[(topic, [(partition, first offset returned or -1)])]."""
    out = []
    for t in response.responses:
        parts = []
        for p in t.partitions:
            assert p.error_code == ErrorCode.none
            batches = [h.base_offset for _pos, h in iter_batches(p.records or b"")]
            parts.append((p.partition_index, batches[0] if batches else -1))
        out.append((t.topic, parts))
    return out


def test_one_partition_named_a_thousand_times_is_answered_once(broker: BrokerThread) -> None:
    response, size = _fetch(broker, _topic("a", *[_partition(0)] * 1000))
    assert _answered(response) == [("a", [(0, 0)])]
    assert size < MAX_BYTES


def test_the_last_mention_decides_in_the_place_of_the_first(broker: BrokerThread) -> None:
    response, size = _fetch(
        broker,
        _topic("a", _partition(0), _partition(1, 2)),
        _topic("a", _partition(0, 1, max_bytes=1)),
        _topic("b", _partition(0)),
        _topic("a", _partition(1, 2)),
        _topic("b"),
    )
    # a-0 from offset 1, one batch (its limit is 1 byte); a-1 from offset 2 fills
    # fetch.max.bytes up to one batch short of the next.
    assert _answered(response) == [("a", [(0, 1), (1, 2)]), ("b", [(0, -1)])]
    assert size < MAX_BYTES
