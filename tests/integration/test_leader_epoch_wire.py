"""Leader epochs on the wire, on a broker alone (every partition at leader
epoch 0): OffsetForLeaderEpoch in each version it is served in, and the
current leader epoch that Fetch and ListOffsets check."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cluster_brokers import metadata
from kio.index import load_request_schema

from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.types import BrokerId, TopicName, i8, i32, i64
from kgroups.protocol.versions import build

from broker_thread import BrokerThread
from raw_wire import call_once

NOW = 1_700_000_000_000
RECORDS = 7
# Kafka 4 serves v2-v4 (v0 and v1 went with KIP-896); v4 is the flexible one.
KAFKA_VERSIONS = range(2, 5)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data").start()
    assert b.broker is not None
    broker = b.broker

    def fill() -> None:
        broker.create_topic("t", 2, {})
        log = broker.partitions.log("t", 0)
        for i in range(RECORDS):
            log.append_records([(b"k", b"v%d" % i, (), NOW + i)], NOW)

    b.call(fill)
    try:
        yield b
    finally:
        b.stop()


def _module(api: str, version: int) -> Any:
    return importlib.import_module(f"kio.schema.{api}.v{version}.request")


def offset_for_leader_epoch(
    version: int, *asks: tuple[str, int, int, int], replica_id: int = -1
) -> Any:
    """Asks of (topic, partition, current leader epoch, leader epoch)."""
    m = _module("offset_for_leader_epoch", version)
    topics = tuple(
        build(
            m.OffsetForLeaderTopic,
            topic=TopicName(topic),
            partitions=(
                build(
                    m.OffsetForLeaderPartition,
                    partition=i32(p),
                    current_leader_epoch=i32(current),
                    leader_epoch=i32(epoch),
                ),
            ),
        )
        for topic, p, current, epoch in asks
    )
    return build(m.OffsetForLeaderEpochRequest, replica_id=BrokerId(replica_id), topics=topics)


def answers(port: int, request: Any) -> list[tuple[str, int, int, int, int]]:
    response = call_once(port, request)
    return [
        (t.topic, p.partition, p.error_code, p.leader_epoch, p.end_offset)
        for t in response.topics
        for p in t.partitions
    ]


def test_offset_for_leader_epoch_is_advertised_from_v2_to_v4() -> None:
    r = apis.SUPPORTED[apis.OFFSET_FOR_LEADER_EPOCH]
    assert (r.name, range(r.min_version, r.max_version + 1)) == (
        "OffsetForLeaderEpoch",
        KAFKA_VERSIONS,
    )
    assert load_request_schema(apis.OFFSET_FOR_LEADER_EPOCH, 4).__flexible__


def test_metadata_answers_the_epoch_the_checks_compare_with(broker: BrokerThread) -> None:
    partitions = metadata(broker.port, "t").topics[0].partitions
    assert [p.leader_epoch for p in partitions] == [0, 0]


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_epoch_zero_ends_at_the_log_end(broker: BrokerThread, version: int) -> None:
    got = answers(
        broker.port,
        offset_for_leader_epoch(
            version,
            ("t", 0, -1, 0),
            ("t", 0, 0, 0),
            ("t", 1, 0, 0),
            ("t", 0, -1, 1),
            ("t", 0, -1, -1),
        ),
    )
    none = ErrorCode.none
    assert got == [
        ("t", 0, none, 0, RECORDS),
        ("t", 0, none, 0, RECORDS),
        ("t", 1, none, 0, 0),
        ("t", 0, none, -1, -1),  # no such epoch yet
        ("t", 0, none, -1, -1),
    ]


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_the_current_leader_epoch_is_checked(broker: BrokerThread, version: int) -> None:
    got = answers(
        broker.port,
        offset_for_leader_epoch(version, ("t", 0, 1, 0), ("t", 0, -2, 0)),
    )
    assert got == [
        ("t", 0, ErrorCode.unknown_leader_epoch, -1, -1),
        ("t", 0, ErrorCode.fenced_leader_epoch, -1, -1),
    ]


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_partitions_not_here_are_unknown(broker: BrokerThread, version: int) -> None:
    got = answers(
        broker.port, offset_for_leader_epoch(version, ("t", 5, -1, 0), ("nope", 0, -1, 0))
    )
    unknown = ErrorCode.unknown_topic_or_partition
    assert got == [("t", 5, unknown, -1, -1), ("nope", 0, unknown, -1, -1)]


def test_a_followers_ask_is_answered_alike(broker: BrokerThread) -> None:
    got = answers(broker.port, offset_for_leader_epoch(4, ("t", 0, 0, 0), replica_id=3))
    assert got == [("t", 0, ErrorCode.none, 0, RECORDS)]


def fetch(version: int, current: int) -> Any:
    m = _module("fetch", version)
    return build(
        m.FetchRequest,
        replica_id=BrokerId(-1),
        max_wait=timedelta(0),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        isolation_level=i8(0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            build(
                m.FetchTopic,
                topic=TopicName("t"),
                partitions=(
                    build(
                        m.FetchPartition,
                        partition=i32(0),
                        current_leader_epoch=i32(current),
                        fetch_offset=i64(0),
                        last_fetched_epoch=i32(-1),
                        log_start_offset=i64(-1),
                        partition_max_bytes=i32(1 << 20),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


@pytest.mark.parametrize("version", range(9, apis.SUPPORTED[apis.FETCH].max_version + 1))
def test_fetch_checks_the_current_leader_epoch(broker: BrokerThread, version: int) -> None:
    for current, error, hw in (
        (0, ErrorCode.none, RECORDS),
        (-1, ErrorCode.none, RECORDS),
        (-2, ErrorCode.none, RECORDS),  # any epoch below zero asks for no check
        (1, ErrorCode.unknown_leader_epoch, -1),
    ):
        p = call_once(broker.port, fetch(version, current)).responses[0].partitions[0]
        assert (p.error_code, p.high_watermark, bool(p.records)) == (error, hw, hw > 0), current


def list_offsets(version: int, current: int, timestamp: int) -> Any:
    m = _module("list_offsets", version)
    return build(
        m.ListOffsetsRequest,
        replica_id=BrokerId(-1),
        isolation_level=i8(0),
        topics=(
            build(
                m.ListOffsetsTopic,
                name=TopicName("t"),
                partitions=(
                    build(
                        m.ListOffsetsPartition,
                        partition_index=i32(0),
                        current_leader_epoch=i32(current),
                        timestamp=i64(timestamp),
                    ),
                ),
            ),
        ),
    )


@pytest.mark.parametrize("version", range(4, apis.SUPPORTED[apis.LIST_OFFSETS].max_version + 1))
def test_list_offsets_checks_the_current_leader_epoch_and_answers_the_epoch(
    broker: BrokerThread, version: int
) -> None:
    def ask(current: int, timestamp: int) -> tuple[int, int, int]:
        response = call_once(broker.port, list_offsets(version, current, timestamp))
        p = response.topics[0].partitions[0]
        return p.error_code, p.offset, p.leader_epoch

    none = ErrorCode.none
    assert ask(0, -1) == (none, RECORDS, 0)
    assert ask(-1, -2) == (none, 0, 0)
    assert ask(0, NOW + 3) == (none, 3, 0)
    assert ask(0, NOW + 100) == (none, -1, -1)  # nothing that late
    assert ask(1, -1) == (ErrorCode.unknown_leader_epoch, -1, -1)
    assert ask(-2, -1) == (ErrorCode.fenced_leader_epoch, -1, -1)  # only -1 asks for no check
    if version >= 7:
        assert ask(0, -3) == (none, RECORDS - 1, 0)
