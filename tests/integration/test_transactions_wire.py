"""Transactions on the partition side, over the wire: transactional Produce,
WriteTxnMarkers, Fetch and ListOffsets at both isolation levels, and the
produce verification hook (KIP-890)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.fetch.v12 import FetchRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.list_offsets.v7 import ListOffsetsRequest
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic
from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.schema.write_txn_markers import v1 as markers_v1
from kio.schema.write_txn_markers import v2 as markers_v2
from kio.static.primitive import Records, i32Timedelta, i64

from kgroups.errors import ErrorCode
from kgroups.protocol.types import BrokerId, ProducerId, TopicName, i8, i16, i32
from kgroups.records.batch import decode_records, encode_batch, iter_batches

from broker_thread import BrokerThread
from process_broker import BrokerProcess
from raw_wire import call_once

NOW = 1_700_000_000_000
TIMEOUT = i32Timedelta.parse(timedelta(seconds=10))
A, B = 5000, 5001
UNCOMMITTED, COMMITTED = 0, 1
# These tests write transactions as a coordinator elsewhere would, with
# producer ids it handed out: the broker does not verify them with its own.
UNVERIFIED = {"transaction.partition.verification.enable": "false"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", **UNVERIFIED).start()
    try:
        yield b
    finally:
        b.stop()


def _create(port: int, name: str = "t") -> None:
    topic = CreatableTopic(
        name=TopicName(name),
        num_partitions=i32(1),
        replication_factor=i16(1),
        assignments=(),
        configs=(),
    )
    created = call_once(
        port, CreateTopicsRequest(topics=(topic,), timeout=TIMEOUT, validate_only=False)
    )
    assert created.topics[0].error_code == ErrorCode.none


def produce(
    port: int,
    values: list[bytes],
    *,
    pid: int = -1,
    epoch: int = 0,
    seq: int = -1,
    txn_id: str | None = None,
) -> ErrorCode:
    batch = encode_batch(
        [(b"k", v, (), NOW) for v in values],
        producer_id=pid,
        producer_epoch=epoch if pid >= 0 else -1,
        base_sequence=seq,
        is_transactional=txn_id is not None,
    )
    request = ProduceRequest(
        transactional_id=txn_id,
        acks=i16(-1),
        timeout=TIMEOUT,
        topic_data=(
            TopicProduceData(
                name=TopicName("t"),
                partition_data=(PartitionProduceData(index=i32(0), records=cast(Records, batch)),),
            ),
        ),
    )
    error: ErrorCode = call_once(port, request).responses[0].partition_responses[0].error_code
    return error


def write_marker(
    port: int,
    pid: int,
    commit: bool,
    *,
    epoch: int = 0,
    coordinator_epoch: int = 0,
    topic: str = "t",
    version: Any = markers_v2,
) -> ErrorCode:
    request = version.WriteTxnMarkersRequest(
        markers=(
            version.request.WritableTxnMarker(
                producer_id=ProducerId(pid),
                producer_epoch=i16(epoch),
                transaction_result=commit,
                topics=(
                    version.request.WritableTxnMarkerTopic(
                        name=TopicName(topic), partition_indexes=(i32(0),)
                    ),
                ),
                coordinator_epoch=i32(coordinator_epoch),
            ),
        )
    )
    result = call_once(port, request).markers[0]
    assert result.producer_id == pid
    error: ErrorCode = result.topics[0].partitions[0].error_code
    return error


def fetch(port: int, isolation: int, offset: int = 0) -> Any:
    request = FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=timedelta(0),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        isolation_level=i8(isolation),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            FetchTopic(
                topic=TopicName("t"),
                partitions=(
                    FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(-1),
                        fetch_offset=i64(offset),
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
    return call_once(port, request).responses[0].partitions[0]


def data_values(records: bytes) -> list[bytes | None]:
    """Values of the data records (control batches left out)."""
    out: list[bytes | None] = []
    for pos, header in iter_batches(records):
        if not header.is_control:
            out.extend(r.value for r in decode_records(records[pos : pos + header.size]))
    return out


def read_all(port: int, isolation: int) -> tuple[list[bytes | None], list[tuple[int, int]]]:
    """Data values and aborted transactions of every fetch from 0 up to where
    the isolation level lets a consumer read (a fetch stops at a segment's end)."""
    values: list[bytes | None] = []
    aborted: list[tuple[int, int]] = []
    offset = 0
    while True:
        answer = fetch(port, isolation, offset)
        values += data_values(answer.records)
        aborted += [(t.producer_id, t.first_offset) for t in answer.aborted_transactions or ()]
        batches = list(iter_batches(answer.records))
        if not batches:
            return values, aborted
        offset = batches[-1][1].next_offset


def latest(port: int, isolation: int) -> int:
    request = ListOffsetsRequest(
        replica_id=BrokerId(-1),
        isolation_level=i8(isolation),
        topics=(
            ListOffsetsTopic(
                name=TopicName("t"),
                partitions=(ListOffsetsPartition(partition_index=i32(0), timestamp=i64(-1)),),
            ),
        ),
    )
    answer = call_once(port, request).topics[0].partitions[0]
    assert answer.error_code == ErrorCode.none
    offset: int = answer.offset
    return offset


def test_read_committed_sees_committed_transactions_only(broker: BrokerThread) -> None:
    port = broker.port
    _create(port)
    assert produce(port, [b"plain"]) == ErrorCode.none  # 0
    assert produce(port, [b"a1", b"a2"], pid=A, seq=0, txn_id="ta") == ErrorCode.none  # 1-2
    assert produce(port, [b"b1"], pid=B, seq=0, txn_id="tb") == ErrorCode.none  # 3

    committed = fetch(port, COMMITTED)
    assert (committed.high_watermark, committed.last_stable_offset) == (4, 1)
    assert data_values(committed.records) == [b"plain"]
    assert committed.aborted_transactions == ()
    uncommitted = fetch(port, UNCOMMITTED)
    assert (uncommitted.high_watermark, uncommitted.last_stable_offset) == (4, 1)
    assert data_values(uncommitted.records) == [b"plain", b"a1", b"a2", b"b1"]
    assert uncommitted.aborted_transactions is None
    assert (latest(port, COMMITTED), latest(port, UNCOMMITTED)) == (1, 4)

    assert write_marker(port, A, commit=True, version=markers_v1) == ErrorCode.none  # 4
    assert fetch(port, COMMITTED).last_stable_offset == 3
    assert write_marker(port, B, commit=False) == ErrorCode.none  # 5
    committed = fetch(port, COMMITTED)
    assert (committed.high_watermark, committed.last_stable_offset) == (6, 6)
    values, aborted = read_all(port, COMMITTED)
    assert values == [b"plain", b"a1", b"a2", b"b1"]
    assert set(aborted) == {(B, 3)}  # in every fetch its range overlaps
    # From offset 4 the fetch still holds B's abort marker (5): B is listed.
    assert len(fetch(port, COMMITTED, offset=4).aborted_transactions) == 1
    assert produce(port, [b"later"]) == ErrorCode.none  # 6
    assert fetch(port, COMMITTED, offset=6).aborted_transactions == ()
    assert latest(port, COMMITTED) == 7


def test_stale_and_misdirected_markers_are_refused(broker: BrokerThread) -> None:
    port = broker.port
    _create(port)
    assert produce(port, [b"a"], pid=A, epoch=3, seq=0, txn_id="ta") == ErrorCode.none
    assert write_marker(port, A, True, epoch=2) == ErrorCode.invalid_producer_epoch
    assert write_marker(port, A, True, epoch=3, coordinator_epoch=5) == ErrorCode.none
    assert (
        write_marker(port, A, False, epoch=3, coordinator_epoch=4)
        == ErrorCode.transaction_coordinator_fenced
    )
    assert write_marker(port, A, True, topic="missing") == ErrorCode.unknown_topic_or_partition


def test_open_transaction_survives_a_restart(broker: BrokerThread) -> None:
    port = broker.port
    _create(port)
    assert produce(port, [b"plain"]) == ErrorCode.none
    assert produce(port, [b"a"], pid=A, seq=0, txn_id="ta") == ErrorCode.none
    broker.restart()
    port = broker.port
    assert fetch(port, COMMITTED).last_stable_offset == 1
    assert write_marker(port, A, commit=False) == ErrorCode.none
    answer = fetch(port, COMMITTED)
    assert answer.last_stable_offset == 3
    assert [(t.producer_id, t.first_offset) for t in answer.aborted_transactions] == [(A, 1)]


class Verifier:
    def __init__(self, refuse: set[int]) -> None:
        self.refuse = refuse
        self.calls: list[tuple[str, int, int, str, int]] = []

    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        topic: str,
        partition: int,
    ) -> ErrorCode:
        self.calls.append((transactional_id, producer_id, producer_epoch, topic, partition))
        return ErrorCode.invalid_txn_state if producer_id in self.refuse else ErrorCode.none


@pytest.mark.parametrize("enabled", [True, False])
def test_first_batch_of_a_transaction_is_verified(tmp_path: Any, enabled: bool) -> None:
    broker = BrokerThread(
        tmp_path, **{"transaction.partition.verification.enable": str(enabled).lower()}
    ).start()
    try:
        assert broker.broker is not None
        verifier = Verifier(refuse={B})
        broker.broker.transactions = verifier
        port = broker.port
        _create(port)
        assert produce(port, [b"a1"], pid=A, seq=0, txn_id="ta") == ErrorCode.none
        assert produce(port, [b"a2"], pid=A, seq=1, txn_id="ta") == ErrorCode.none
        refused = produce(port, [b"b"], pid=B, seq=0, txn_id="tb")
        assert produce(port, [b"plain"]) == ErrorCode.none
        assert write_marker(port, A, commit=True) == ErrorCode.none
        assert produce(port, [b"a3"], pid=A, seq=2, txn_id="ta") == ErrorCode.none
        if enabled:
            assert refused == ErrorCode.invalid_txn_state
            assert verifier.calls == [
                ("ta", A, 0, "t", 0),
                ("tb", B, 0, "t", 0),
                ("ta", A, 0, "t", 0),
            ]
            assert read_all(port, UNCOMMITTED)[0] == [b"a1", b"a2", b"plain", b"a3"]
            assert read_all(port, COMMITTED)[0] == [b"a1", b"a2", b"plain"]
        else:
            assert refused == ErrorCode.none
            assert verifier.calls == []
    finally:
        broker.stop()


def test_transactions_survive_kill_9(tmp_path: Path) -> None:
    # Small segments: rolls snapshot the producer state between the batches.
    broker = BrokerProcess(
        tmp_path / "data",
        None,
        "log.segment.bytes=300",
        "transaction.partition.verification.enable=false",
    )
    broker.start()
    try:
        port = broker.port
        _create(port)
        for seq in range(0, 8, 2):
            assert produce(port, [b"a%d" % seq, b"x"], pid=A, seq=seq, txn_id="ta") == 0
        assert produce(port, [b"b"], pid=B, seq=0, txn_id="tb") == 0
        assert write_marker(port, A, commit=False) == ErrorCode.none
        before = fetch(port, COMMITTED)
        assert before.last_stable_offset == 8  # B's batch
        broker.kill()
        broker.start()
        port = broker.port
        after = fetch(port, COMMITTED)
        assert after.last_stable_offset == 8
        assert set(read_all(port, COMMITTED)[1]) == {(A, 0)}
        assert write_marker(port, B, commit=True) == ErrorCode.none
        values, aborted = read_all(port, COMMITTED)
        # The aborted records are sent too: the consumer drops them by ``aborted``.
        assert values[-1] == b"b" and len(values) == 9 and set(aborted) == {(A, 0)}
    finally:
        broker.stop()
