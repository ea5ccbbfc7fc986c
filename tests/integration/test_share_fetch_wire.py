"""ShareFetch and ShareAcknowledge on the wire (KIP-932): share sessions and
their epochs, acquisition and acknowledgement, redelivery with a higher
delivery count after a release, a lock timeout, a closed session or an
expired member."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cluster_brokers import create_topic, metadata, produce
from kio.schema.share_acknowledge.v2 import ShareAcknowledgeRequest
from kio.schema.share_acknowledge.v2.request import (
    AcknowledgementBatch as AckBatch,
)
from kio.schema.share_acknowledge.v2.request import (
    AcknowledgePartition,
    AcknowledgeTopic,
)
from kio.schema.share_fetch.v2 import ShareFetchRequest
from kio.schema.share_fetch.v2.request import AcknowledgementBatch, FetchPartition, FetchTopic
from kio.schema.share_group_heartbeat.v1 import ShareGroupHeartbeatRequest
from kio.static.primitive import i32Timedelta

from kgroups.clock import ManualClock
from kgroups.errors import ErrorCode
from kgroups.handlers import share_reads
from kgroups.protocol.types import GroupId, TopicName, i8, i32, i64
from kgroups.records.batch import decode_records, iter_batches

from broker_thread import BrokerThread
from raw_wire import call, call_once

# A member's connection: its share session lives as long as it does.
_connections: dict[tuple[int, str], socket.socket] = {}


def _connection(broker: BrokerThread, member: str) -> socket.socket:
    key = (broker.port, member)
    s = _connections.get(key)
    if s is None:
        s = _connections[key] = socket.create_connection(("127.0.0.1", broker.port), 30)
    return s


def disconnect(broker: BrokerThread, member: str) -> None:
    _connections.pop((broker.port, member)).close()


def stop(broker: BrokerThread) -> None:
    """Members' connections close first: the broker need not wait for them."""
    for key in [k for k in _connections if k[0] == broker.port]:
        _connections.pop(key).close()
    broker.stop()


GROUP = "queue"
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4
Acks = tuple[tuple[int, int, int], ...]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def broker(tmp_path: Path, clock: ManualClock) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", clock=clock).start()
    try:
        yield b
    finally:
        stop(b)


def _topic(broker: BrokerThread, records: int) -> uuid.UUID:
    assert create_topic(broker.port, "t", 1) is ErrorCode.none
    topic_id: uuid.UUID = metadata(broker.port, "t").topics[0].topic_id
    # An empty partition: its share partition starts at 0 (latest), then records come.
    assert share_fetch(broker, topic_id, "m1", 0, wait_ms=0).error_code is ErrorCode.none
    values = [f"r{i}".encode() for i in range(records)]
    assert produce(broker.port, "t", 0, *values)[0] is ErrorCode.none
    return topic_id


def share_fetch(
    broker: BrokerThread,
    topic_id: uuid.UUID,
    member: str,
    epoch: int,
    acks: Acks = (),
    wait_ms: int = 200,
    renew: bool = False,
) -> Any:
    # A renewing request fetches nothing: its limits are all 0 (KIP-1222).
    limit = 0 if renew else 1
    request = ShareFetchRequest(
        group_id=GroupId(GROUP),
        member_id=member,
        share_session_epoch=i32(epoch),
        max_wait=i32Timedelta.parse(timedelta(milliseconds=wait_ms * limit)),
        min_bytes=i32(limit),
        max_bytes=i32(limit * (2**31 - 1)),
        max_records=i32(500 * limit),
        batch_size=i32(500),
        is_renew_ack=renew,
        topics=(
            FetchTopic(
                topic_id=topic_id,
                partitions=(
                    FetchPartition(
                        partition_index=i32(0),
                        acknowledgement_batches=tuple(
                            AcknowledgementBatch(
                                first_offset=i64(f),
                                last_offset=i64(last),
                                acknowledge_types=(i8(t),),
                            )
                            for f, last, t in acks
                        ),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )
    return call(_connection(broker, member), request)[0]


def share_ack(
    broker: BrokerThread, topic_id: uuid.UUID, member: str, epoch: int, acks: Acks
) -> Any:
    request = ShareAcknowledgeRequest(
        group_id=GroupId(GROUP),
        member_id=member,
        share_session_epoch=i32(epoch),
        topics=(
            AcknowledgeTopic(
                topic_id=topic_id,
                partitions=(
                    AcknowledgePartition(
                        partition_index=i32(0),
                        acknowledgement_batches=tuple(
                            AckBatch(
                                first_offset=i64(f),
                                last_offset=i64(last),
                                acknowledge_types=(i8(t),),
                            )
                            for f, last, t in acks
                        ),
                    ),
                ),
            ),
        ),
    )
    return call(_connection(broker, member), request)[0]


def acquired(response: Any) -> list[tuple[int, int, int]]:
    assert response.error_code is ErrorCode.none, response.error_message
    return [
        (r.first_offset, r.last_offset, r.delivery_count)
        for t in response.responses
        for p in t.partitions
        for r in p.acquired_records
    ]


def ack_errors(response: Any) -> list[ErrorCode]:
    return [p.acknowledge_error_code for t in response.responses for p in t.partitions]


def test_records_are_acquired_acknowledged_and_redelivered(broker: BrokerThread) -> None:
    topic_id = _topic(broker, 5)
    first = share_fetch(broker, topic_id, "m1", 1)
    assert acquired(first) == [(0, 4, 1)]
    assert first.acquisition_lock_timeout == timedelta(seconds=30)
    (partition,) = first.responses[0].partitions
    assert [r.value for r in decode_records(partition.records)] == [
        f"r{i}".encode() for i in range(5)
    ]
    # Acknowledgements ride on the next fetch; the released ones come back.
    second = share_fetch(broker, topic_id, "m1", 2, acks=((0, 1, RELEASE), (2, 4, ACCEPT)))
    assert ack_errors(second) == [ErrorCode.none]
    assert acquired(second) == [(0, 1, 2)]
    done = share_ack(broker, topic_id, "m1", 3, ((0, 1, REJECT),))
    assert done.error_code is ErrorCode.none
    assert done.responses[0].partitions[0].error_code is ErrorCode.none
    # Nothing left: accepted and rejected records are never delivered again.
    assert acquired(share_fetch(broker, topic_id, "m1", 4, wait_ms=0)) == []


def test_share_session_errors(broker: BrokerThread) -> None:
    topic_id = _topic(broker, 3)
    assert (
        share_fetch(broker, topic_id, "m1", 5).error_code is ErrorCode.invalid_share_session_epoch
    )
    assert share_fetch(broker, topic_id, "m2", 1).error_code is ErrorCode.share_session_not_found
    opening_with_acks = share_fetch(broker, topic_id, "m2", 0, acks=((0, 0, ACCEPT),))
    assert opening_with_acks.error_code is ErrorCode.invalid_request
    assert share_ack(broker, topic_id, "m1", 0, ()).error_code is (
        ErrorCode.invalid_share_session_epoch
    )
    # The session is still at epoch 1.
    assert acquired(share_fetch(broker, topic_id, "m1", 1)) == [(0, 2, 1)]


def test_only_the_holder_acknowledges(broker: BrokerThread) -> None:
    topic_id = _topic(broker, 3)
    assert acquired(share_fetch(broker, topic_id, "m1", 1)) == [(0, 2, 1)]
    assert acquired(share_fetch(broker, topic_id, "m2", 0, wait_ms=0)) == []
    refused = share_ack(broker, topic_id, "m2", 1, ((0, 2, ACCEPT),))
    assert refused.responses[0].partitions[0].error_code is ErrorCode.invalid_record_state


def test_a_lock_timeout_hands_records_to_another_member(
    broker: BrokerThread, clock: ManualClock
) -> None:
    topic_id = _topic(broker, 3)
    assert acquired(share_fetch(broker, topic_id, "m1", 1)) == [(0, 2, 1)]
    assert acquired(share_fetch(broker, topic_id, "m2", 0, wait_ms=0)) == []
    clock.advance(20_000)
    # RENEW (KIP-1222) restarts the lock of the first record only.
    renewed = share_fetch(broker, topic_id, "m1", 2, acks=((0, 0, RENEW),), renew=True)
    assert ack_errors(renewed) == [ErrorCode.none] and acquired(renewed) == []
    clock.advance(10_000)
    assert acquired(share_fetch(broker, topic_id, "m2", 1, wait_ms=0)) == [(1, 2, 2)]
    late = share_ack(broker, topic_id, "m1", 3, ((1, 2, ACCEPT),))
    assert late.responses[0].partitions[0].error_code is ErrorCode.invalid_record_state


def test_closing_a_session_releases_its_records(broker: BrokerThread) -> None:
    topic_id = _topic(broker, 3)
    assert acquired(share_fetch(broker, topic_id, "m1", 1)) == [(0, 2, 1)]
    closed = share_ack(broker, topic_id, "m1", -1, ((0, 0, ACCEPT),))
    assert closed.responses[0].partitions[0].error_code is ErrorCode.none
    assert acquired(share_fetch(broker, topic_id, "m2", 0, wait_ms=0)) == [(1, 2, 2)]
    assert share_fetch(broker, topic_id, "m1", 2).error_code is ErrorCode.share_session_not_found


def test_a_closed_connection_ends_its_share_session(broker: BrokerThread) -> None:
    topic_id = _topic(broker, 3)
    assert acquired(share_fetch(broker, topic_id, "m1", 1)) == [(0, 2, 1)]
    disconnect(broker, "m1")
    # The records come back at once, not when their lock times out.
    deadline = time.monotonic() + 10
    got: list[tuple[int, int, int]] = []
    epoch = 0
    while not got:
        assert time.monotonic() < deadline
        got = acquired(share_fetch(broker, topic_id, "m2", epoch, wait_ms=50))
        epoch += 1
    assert got == [(0, 2, 2)]
    assert share_fetch(broker, topic_id, "m1", 2).error_code is ErrorCode.share_session_not_found


def test_a_member_whose_session_expires_loses_its_records(tmp_path: Path) -> None:
    broker = BrokerThread(
        tmp_path / "data",
        group_share_session_timeout_ms=1000,
        group_share_min_session_timeout_ms=1000,
    ).start()
    try:
        topic_id = _topic(broker, 3)
        joined = call_once(
            broker.port,
            ShareGroupHeartbeatRequest(
                group_id=GroupId(GROUP),
                member_id="m1",
                member_epoch=i32(0),
                subscribed_topic_names=(TopicName("t"),),
            ),
        )
        assert joined.error_code is ErrorCode.none and joined.member_epoch == 1
        assert acquired(share_fetch(broker, topic_id, "m1", 1)) == [(0, 2, 1)]
        # m1 sends no more heartbeats: once its session ends, m2 gets its records.
        deadline = time.monotonic() + 30
        got: list[tuple[int, int, int]] = []
        epoch = 0
        while not got:
            assert time.monotonic() < deadline
            got = acquired(share_fetch(broker, topic_id, "m2", epoch, wait_ms=100))
            epoch += 1
        assert got == [(0, 2, 2)]
    finally:
        stop(broker)


def test_share_partition_state_survives_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerThread(data).start()
    try:
        topic_id = _topic(broker, 5)
        assert acquired(share_fetch(broker, topic_id, "m1", 1)) == [(0, 4, 1)]
        done = share_ack(broker, topic_id, "m1", 2, ((0, 1, ACCEPT), (2, 2, RELEASE)))
        assert done.responses[0].partitions[0].error_code is ErrorCode.none
    finally:
        stop(broker)
    broker = BrokerThread(data).start()
    try:
        # Accepted records stay done; the others come back, their deliveries counted.
        assert acquired(share_fetch(broker, topic_id, "m2", 0, wait_ms=0)) == [(2, 4, 2)]
    finally:
        stop(broker)


def test_describe_share_group_offsets(broker: BrokerThread) -> None:
    from kio.schema.describe_share_group_offsets.v1 import DescribeShareGroupOffsetsRequest
    from kio.schema.describe_share_group_offsets.v1.request import (
        DescribeShareGroupOffsetsRequestGroup,
        DescribeShareGroupOffsetsRequestTopic,
    )

    topic_id = _topic(broker, 5)
    joined = call_once(
        broker.port,
        ShareGroupHeartbeatRequest(
            group_id=GroupId(GROUP),
            member_id="m1",
            member_epoch=i32(0),
            subscribed_topic_names=(TopicName("t"),),
        ),
    )
    assert joined.error_code is ErrorCode.none
    assert acquired(share_fetch(broker, topic_id, "m1", 1)) == [(0, 4, 1)]
    share_ack(broker, topic_id, "m1", 2, ((0, 1, ACCEPT), (3, 3, REJECT)))

    def describe(group: str, topics: Any = None) -> Any:
        request = DescribeShareGroupOffsetsRequest(
            groups=(DescribeShareGroupOffsetsRequestGroup(group_id=GroupId(group), topics=topics),)
        )
        (answer,) = call_once(broker.port, request).groups
        return answer

    every = describe(GROUP)
    assert every.error_code is ErrorCode.none
    ((name, partitions),) = [(t.topic_name, t.partitions) for t in every.topics]
    assert name == "t"
    # Start offset 2; of the 3 records from there, offset 3 is done.
    assert [(p.partition_index, p.start_offset, p.lag) for p in partitions] == [(0, 2, 2)]
    named = describe(
        GROUP,
        (DescribeShareGroupOffsetsRequestTopic(topic_name=TopicName("t"), partitions=(i32(0),)),),
    )
    assert named.topics[0].partitions[0].start_offset == 2
    missing = describe("nobody")
    assert missing.error_code is ErrorCode.group_id_not_found
    assert missing.error_message == "Group nobody not found."


def test_a_share_partition_may_start_a_duration_back(tmp_path: Path) -> None:
    from config_admin_wire import SET, incremental

    group_resource = 32
    broker = BrokerThread(tmp_path / "data").start()
    try:
        assert create_topic(broker.port, "t", 1) is ErrorCode.none
        topic_id: uuid.UUID = metadata(broker.port, "t").topics[0].topic_id
        now = int(time.time() * 1000)
        produce(broker.port, "t", 0, b"old-0", b"old-1", timestamp=now - 2 * 3_600_000)
        produce(broker.port, "t", 0, b"new-2", b"new-3", timestamp=now - 60_000)
        refused = incremental(
            broker.port,
            [(group_resource, GROUP, [("share.auto.offset.reset", SET, "by_duration:-PT1H")])],
        )
        assert refused[0][1] is ErrorCode.invalid_config
        reset = [("share.auto.offset.reset", SET, "by_duration:PT1H")]
        assert incremental(broker.port, [(group_resource, GROUP, reset)])[0][1] is ErrorCode.none
        assert acquired(share_fetch(broker, topic_id, "m1", 0)) == [(2, 3, 1)]
    finally:
        stop(broker)


def test_unknown_topics_and_partitions_answer_their_errors(broker: BrokerThread) -> None:
    topic_id = _topic(broker, 1)
    unknown = uuid.uuid4()
    response = share_fetch(broker, unknown, "m2", 0, wait_ms=0)
    assert response.error_code is ErrorCode.none
    (partition,) = response.responses[0].partitions
    assert partition.error_code is ErrorCode.unknown_topic_id
    request = ShareFetchRequest(
        group_id=GroupId(GROUP),
        member_id="m3",
        share_session_epoch=i32(0),
        max_wait=i32Timedelta.parse(timedelta(0)),
        min_bytes=i32(1),
        max_records=i32(10),
        batch_size=i32(10),
        topics=(
            FetchTopic(
                topic_id=topic_id,
                partitions=(FetchPartition(partition_index=i32(5), acknowledgement_batches=()),),
            ),
        ),
        forgotten_topics_data=(),
    )
    (missing,) = call(_connection(broker, "m3"), request)[0].responses[0].partitions
    assert missing.error_code is ErrorCode.unknown_topic_or_partition


def test_a_forgotten_partition_is_no_longer_fetched(broker: BrokerThread) -> None:
    from kio.schema.share_fetch.v2.request import ForgottenTopic

    topic_id = _topic(broker, 3)
    forget = ShareFetchRequest(
        group_id=GroupId(GROUP),
        member_id="m1",
        share_session_epoch=i32(1),
        max_wait=i32Timedelta.parse(timedelta(0)),
        min_bytes=i32(1),
        max_records=i32(10),
        batch_size=i32(10),
        topics=(),
        forgotten_topics_data=(ForgottenTopic(topic_id=topic_id, partitions=(i32(0),)),),
    )
    assert acquired(call(_connection(broker, "m1"), forget)[0]) == []
    # Named again, it is fetched again.
    assert acquired(share_fetch(broker, topic_id, "m1", 2)) == [(0, 2, 1)]


def test_alter_and_delete_share_group_offsets(broker: BrokerThread) -> None:
    from kio.schema.alter_share_group_offsets.v0 import AlterShareGroupOffsetsRequest
    from kio.schema.alter_share_group_offsets.v0.request import (
        AlterShareGroupOffsetsRequestPartition,
        AlterShareGroupOffsetsRequestTopic,
    )
    from kio.schema.delete_share_group_offsets.v0 import DeleteShareGroupOffsetsRequest
    from kio.schema.delete_share_group_offsets.v0.request import (
        DeleteShareGroupOffsetsRequestTopic,
    )

    topic_id = _topic(broker, 5)

    def alter(group: str, offset: int) -> Any:
        topics = (
            AlterShareGroupOffsetsRequestTopic(
                topic_name=TopicName("t"),
                partitions=(
                    AlterShareGroupOffsetsRequestPartition(
                        partition_index=i32(0), start_offset=i64(offset)
                    ),
                ),
            ),
        )
        request = AlterShareGroupOffsetsRequest(group_id=GroupId(group), topics=topics)
        return call_once(broker.port, request)

    def delete(group: str) -> Any:
        topics = (DeleteShareGroupOffsetsRequestTopic(topic_name=TopicName("t")),)
        request = DeleteShareGroupOffsetsRequest(group_id=GroupId(group), topics=topics)
        return call_once(broker.port, request)

    # An empty share group, made by the alter: its partition starts at 3.
    altered = alter(GROUP, 3)
    assert altered.error_code is ErrorCode.none
    assert altered.responses[0].partitions[0].error_code is ErrorCode.none
    assert acquired(share_fetch(broker, topic_id, "m1", 1)) == [(3, 4, 1)]
    # Deleted: the next fetch starts it where share.auto.offset.reset says (latest).
    assert delete(GROUP).responses[0].error_code is ErrorCode.none
    assert acquired(share_fetch(broker, topic_id, "m1", 2, wait_ms=0)) == []
    assert delete("nobody").error_code is ErrorCode.group_id_not_found
    # A group with a member may not be changed.
    joined = call_once(
        broker.port,
        ShareGroupHeartbeatRequest(
            group_id=GroupId(GROUP),
            member_id="m1",
            member_epoch=i32(0),
            subscribed_topic_names=(TopicName("t"),),
        ),
    )
    assert joined.error_code is ErrorCode.none
    busy = alter(GROUP, 0)
    assert busy.error_code is ErrorCode.non_empty_group
    assert busy.responses[0].partitions[0].error_code is ErrorCode.non_empty_group


def test_a_waiting_fetch_gets_records_as_soon_as_they_are_released(broker: BrokerThread) -> None:
    import threading

    topic_id = _topic(broker, 3)
    assert acquired(share_fetch(broker, topic_id, "m1", 1)) == [(0, 2, 1)]
    assert acquired(share_fetch(broker, topic_id, "m2", 0, wait_ms=0)) == []
    answers: list[Any] = []
    waiting = threading.Thread(
        target=lambda: answers.append(share_fetch(broker, topic_id, "m2", 1, wait_ms=30_000))
    )
    started = time.monotonic()
    waiting.start()
    time.sleep(0.3)  # m2's fetch is parked by now (if not, it finds the records at once)
    assert share_ack(broker, topic_id, "m1", 2, ((0, 2, RELEASE),)).error_code is ErrorCode.none
    waiting.join(25)
    # Answered well before its 30 s wait, with the released records.
    assert time.monotonic() - started < 20
    assert acquired(answers[0]) == [(0, 2, 2)]


def test_a_fetch_reads_the_log_piece_by_piece_as_far_as_it_acquires(
    broker: BrokerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pieces of one batch each: this fetch's records come from four reads.
    monkeypatch.setattr(share_reads, "FIRST_READ_BYTES", 1)
    topic_id = _topic(broker, 3)
    for i in range(3, 6):
        assert produce(broker.port, "t", 0, f"r{i}".encode())[0] is ErrorCode.none
    first = share_fetch(broker, topic_id, "m1", 1)
    assert acquired(first) == [(0, 5, 1)]
    (partition,) = first.responses[0].partitions
    assert [r.value for r in decode_records_of(partition.records)] == [
        f"r{i}".encode() for i in range(6)
    ]


def decode_records_of(data: bytes) -> list[Any]:
    """The records of every batch in ``data``."""
    view = memoryview(data)
    return [r for pos, h in iter_batches(view) for r in decode_records(view[pos : pos + h.size])]


def test_a_share_partition_initialized_again_is_dropped_by_its_leader(
    broker: BrokerThread,
) -> None:
    """Its state initialized again (as a group coordinator on another broker
    does after DeleteShareGroupOffsets, for the group's next member), the
    leader's next write is fenced: the acknowledgement fails, and the share
    partition starts again where the new state says (no start offset:
    share.auto.offset.reset, latest), not where the leader had it."""
    from kio.schema.initialize_share_group_state.v0 import InitializeShareGroupStateRequest
    from kio.schema.initialize_share_group_state.v0 import request as init_wire

    topic_id = _topic(broker, 5)
    assert acquired(share_fetch(broker, topic_id, "m1", 1)) == [(0, 4, 1)]
    reinitialized = call_once(
        broker.port,
        InitializeShareGroupStateRequest(
            group_id=GROUP,
            topics=(
                init_wire.InitializeStateData(
                    topic_id=topic_id,
                    partitions=(
                        init_wire.PartitionData(
                            partition=i32(0), state_epoch=i32(5), start_offset=i64(-1)
                        ),
                    ),
                ),
            ),
        ),
    )
    assert reinitialized.results[0].partitions[0].error_code is ErrorCode.none
    fenced = share_ack(broker, topic_id, "m1", 2, ((0, 4, ACCEPT),))
    assert fenced.responses[0].partitions[0].error_code is ErrorCode.fenced_state_epoch
    assert acquired(share_fetch(broker, topic_id, "m2", 0, wait_ms=0)) == []
    assert produce(broker.port, "t", 0, b"new")[0] is ErrorCode.none
    assert acquired(share_fetch(broker, topic_id, "m2", 1)) == [(5, 5, 1)]
