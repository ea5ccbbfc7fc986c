"""A huge but valid request does not keep other clients waiting.

While one connection creates a topic of thousands of partitions, auto-creates
hundreds of topics, deletes a big topic or commits offsets of 600,000
partitions (18 MB), another connection's ApiVersions requests are answered
within a generous bound (before, creating 2,000 partitions stalled the event
loop for seconds, and the commit for almost three).
"""

from __future__ import annotations

import dataclasses
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.delete_topics.v6 import DeleteTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.schema.heartbeat.v4 import HeartbeatRequest
from kio.schema.join_group.v9 import JoinGroupRequest
from kio.schema.join_group.v9.request import JoinGroupRequestProtocol
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.offset_commit.v9 import OffsetCommitRequest
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.sync_group.v5 import SyncGroupRequest
from kio.schema.sync_group.v5.request import SyncGroupRequestAssignment
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import GroupId, TopicName, i16, i32, i64

from broker_thread import BrokerThread
from process_broker import BrokerProcess
from raw_wire import call_once, decode_response, encode_request, read_frame

# Far above a loop turn (with room for a machine busy with other work), far
# below what the synchronous code stalled for.
MAX_STALL_S = 2.5
TIMEOUT = i32Timedelta.parse(timedelta(minutes=5))


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data").start()
    try:
        yield b
    finally:
        b.stop()


def _slowest_answer_while(port: int, work: Callable[[], Any]) -> tuple[float, Any]:
    """The longest ApiVersions round trip on another connection while ``work`` runs."""
    done = threading.Event()
    worst = [0.0]
    probe_body = struct.pack(">hhih", 18, 0, 7, 1) + b"p"

    def probe() -> None:
        with socket.create_connection(("127.0.0.1", port), 60) as s:
            while not done.is_set():
                started = time.perf_counter()
                s.sendall(struct.pack(">i", len(probe_body)) + probe_body)
                read_frame(s)
                worst[0] = max(worst[0], time.perf_counter() - started)
                time.sleep(0.005)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    time.sleep(0.1)
    try:
        result = work()
    finally:
        done.set()
        thread.join(60)
    return worst[0], result


def _create(name: str, partitions: int) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=TopicName(name),
                num_partitions=i32(partitions),
                replication_factor=i16(1),
                assignments=(),
                configs=(),
            ),
        ),
        timeout=TIMEOUT,
        validate_only=False,
    )


def test_creating_and_deleting_a_big_topic_leaves_others_served(broker: BrokerThread) -> None:
    assert broker.broker is not None
    port = broker.broker.port
    data = broker.broker.log_dir

    stall, created = _slowest_answer_while(port, lambda: call_once(port, _create("big", 2000)))
    assert created.topics[0].error_code == ErrorCode.none
    assert stall < MAX_STALL_S, f"other clients waited {stall:.2f}s during CreateTopics"
    assert len(list(data.glob("big-*"))) == 2000

    delete = DeleteTopicsRequest(
        topics=(DeleteTopicState(name=TopicName("big"), topic_id=None),), timeout=TIMEOUT
    )
    stall, deleted = _slowest_answer_while(port, lambda: call_once(port, delete))
    assert deleted.responses[0].error_code == ErrorCode.none
    assert stall < MAX_STALL_S, f"other clients waited {stall:.2f}s during DeleteTopics"
    assert not list(data.glob("big-*"))
    again = call_once(port, _create("big", 1))
    assert again.topics[0].error_code == ErrorCode.none


def test_auto_creating_many_topics_leaves_others_served(broker: BrokerThread) -> None:
    assert broker.broker is not None
    port = broker.broker.port
    names = [f"auto-{i}" for i in range(400)]
    request = MetadataRequest(
        topics=tuple(MetadataRequestTopic(topic_id=None, name=TopicName(n)) for n in names),
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    stall, response = _slowest_answer_while(port, lambda: call_once(port, request))
    assert [t.name for t in response.topics] == names
    assert all(t.error_code == ErrorCode.none and len(t.partitions) == 1 for t in response.topics)
    assert stall < MAX_STALL_S, f"other clients waited {stall:.2f}s during auto-creation"
    # Created for good: listed again, and in the registry a restart reads.
    again = call_once(port, request)
    assert {t.topic_id for t in again.topics} == {t.topic_id for t in response.topics}


def _join(port: int, group: str, session_ms: int) -> tuple[str, int]:
    """Join ``group`` as its only member and sync; (member id, generation)."""
    join = JoinGroupRequest(
        group_id=GroupId(group),
        session_timeout=i32Timedelta.parse(timedelta(milliseconds=session_ms)),
        rebalance_timeout=i32Timedelta.parse(timedelta(seconds=10)),
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
    )
    deadline = time.monotonic() + 30
    while True:
        joined = call_once(port, join)
        if joined.error_code == ErrorCode.member_id_required:
            join = dataclasses.replace(join, member_id=joined.member_id)
        elif joined.error_code == ErrorCode.none:
            break
        assert time.monotonic() < deadline, joined
        time.sleep(0.05)
    synced = call_once(
        port,
        SyncGroupRequest(
            group_id=GroupId(group),
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=(SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b""),),
        ),
    )
    assert synced.error_code == ErrorCode.none
    return joined.member_id, joined.generation_id


def test_heartbeats_keep_a_short_session_alive_during_a_big_create(tmp_path: Path) -> None:
    broker = BrokerThread(tmp_path / "data", group_min_session_timeout_ms=500).start()
    try:
        assert broker.broker is not None
        port = broker.broker.port
        member_id, generation = _join(port, "steady", session_ms=1500)
        heartbeat = HeartbeatRequest(
            group_id=GroupId("steady"),
            generation_id=i32(generation),
            member_id=member_id,
            group_instance_id=None,
        )
        errors: list[ErrorCode] = []
        done = threading.Event()

        def beat() -> None:
            while not done.is_set():
                errors.append(call_once(port, heartbeat).error_code)
                time.sleep(0.25)

        beater = threading.Thread(target=beat, daemon=True)
        beater.start()
        try:
            created = call_once(port, _create("big", 2000))
            time.sleep(0.5)
        finally:
            done.set()
            beater.join(30)
        assert created.topics[0].error_code == ErrorCode.none
        assert len(errors) >= 2
        assert set(errors) == {ErrorCode.none}, errors
    finally:
        broker.stop()


def _huge_commit_frame() -> bytes:
    """OffsetCommit v9 of 600 topics x 1,000 partitions, about 18 MB."""
    request = OffsetCommitRequest(
        group_id=GroupId("huge"),
        generation_id_or_member_epoch=i32(-1),
        member_id="",
        group_instance_id=None,
        topics=tuple(
            OffsetCommitRequestTopic(
                name=TopicName("t" if t == 0 else f"unknown-{t}"),
                partitions=tuple(
                    OffsetCommitRequestPartition(
                        partition_index=i32(p),
                        committed_offset=i64(p),
                        committed_leader_epoch=i32(-1),
                        committed_metadata="some metadata",
                    )
                    for p in range(1000)
                ),
            )
            for t in range(600)
        ),
    )
    return encode_request(request)


def test_huge_offset_commit_leaves_others_served(tmp_path: Path) -> None:
    # A broker process of its own: building the request here must not stall it.
    frame = _huge_commit_frame()
    assert len(frame) > 18_000_000
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        assert call_once(broker.port, _create("t", 2)).topics[0].error_code == ErrorCode.none

        def commit() -> Any:
            with socket.create_connection(("127.0.0.1", broker.port), 300) as s:
                s.sendall(frame)
                return read_frame(s)

        stall, answer = _slowest_answer_while(broker.port, commit)
        response = decode_response(OffsetCommitRequest, answer)
        errors = {
            (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
        }
        assert len(errors) == 600_000
        assert errors.pop(("t", 0)) == errors.pop(("t", 1)) == ErrorCode.none
        assert set(errors.values()) == {ErrorCode.unknown_topic_or_partition}
        assert stall < MAX_STALL_S, f"other clients waited {stall:.2f}s during OffsetCommit"
    finally:
        broker.stop()
