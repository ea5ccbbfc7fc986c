"""OffsetCommit taken on the connection (handlers/fast_commit.py) answers
byte for byte as the general path (dispatch) answers the same request, for
every outcome the coordinator can give: committed, the partitions' own
errors, and each way a commit is fenced; and it leaves to the general path
what it does not take."""

from __future__ import annotations

import dataclasses
import datetime
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.join_group.v9 import JoinGroupRequest
from kio.schema.join_group.v9.request import JoinGroupRequestProtocol
from kio.schema.offset_fetch.v9.request import OffsetFetchRequest, OffsetFetchRequestGroup
from kio.schema.sync_group.v5 import SyncGroupRequest
from kio.schema.sync_group.v5.request import SyncGroupRequestAssignment
from kio.static.primitive import i32, i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.handlers.dispatch import dispatch
from kgroups.handlers.fast_commit import answer_commit
from kgroups.protocol.types import GroupId, TopicName
from kgroups.server.broker import Broker
from kgroups.testing import EmbeddedBroker

from commit_frames import VERSIONS, commit_frame, commit_request
from raw_wire import call, decode_response, encode_request, read_frame

HOST = "127.0.0.1"
TOPICS = {"t": [0, 1, 2], "u": [0]}


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(
        overrides={"offset.metadata.max.bytes": "8", "group.min.session.timeout.ms": "1000"}
    ) as b:
        b._impl.call(lambda: _inner(b).create_topic("t", 3, {}))  # type: ignore[union-attr]
        b._impl.call(lambda: _inner(b).create_topic("u", 1, {}))  # type: ignore[union-attr]
        # As a client's FindCoordinator does first.
        b._impl.call(lambda: _inner(b).coordinator.ensure_offsets_topic())  # type: ignore[union-attr]
        yield b


def _inner(broker: EmbeddedBroker) -> Broker:
    inner = broker._impl.broker  # type: ignore[union-attr]
    assert inner is not None
    return inner


def _both(broker: EmbeddedBroker, frame: bytes) -> tuple[bytes | None, bytes | None]:
    """The fast path's answer (None: not taken) and the general path's."""
    inner = _inner(broker)

    async def run() -> tuple[bytes | None, bytes | None]:
        committed = answer_commit(inner, frame, HOST)
        fast = None if committed is None else await committed
        return fast, await dispatch(inner, frame, HOST)

    return broker._impl.run(run())  # type: ignore[union-attr]


def _errors(frame: bytes, answer: bytes) -> set[ErrorCode]:
    version = int.from_bytes(frame[2:4], "big")
    request_type = __import__(
        f"kio.schema.offset_commit.v{version}.request", fromlist=["OffsetCommitRequest"]
    ).OffsetCommitRequest
    response = decode_response(request_type, answer[4:])
    return {p.error_code for t in response.topics for p in t.partitions}


def _same(broker: EmbeddedBroker, frame: bytes, *errors: ErrorCode) -> None:
    fast, general = _both(broker, frame)
    assert fast is not None, "the fast path did not take it"
    assert fast == general
    assert _errors(frame, fast) == set(errors)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_simple_commit_answers_alike(broker: EmbeddedBroker, version: int) -> None:
    _same(broker, commit_frame(version, f"simple-{version}", TOPICS), ErrorCode.none)
    _same(broker, commit_frame(version, f"simple-{version}", TOPICS, metadata=None), ErrorCode.none)


@pytest.mark.parametrize("version", [2, 7, 9])
def test_metadata_over_the_limit_answers_alike(broker: EmbeddedBroker, version: int) -> None:
    _same(
        broker,
        commit_frame(version, f"large-{version}", {"t": [0]}, metadata="x" * 9),
        ErrorCode.offset_metadata_too_large,
    )


def _join(port: int, group: str) -> tuple[str, int]:
    """Join ``group`` as its only classic member and sync: (member id, generation)."""
    join = JoinGroupRequest(
        group_id=GroupId(group),
        session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        member_id="",
        group_instance_id="static-1",
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
    )
    deadline = time.monotonic() + 30
    with socket.create_connection((HOST, port), 30) as s:
        while True:
            joined, _ = call(s, join)
            if joined.error_code == ErrorCode.member_id_required:
                join = dataclasses.replace(join, member_id=joined.member_id)
            elif joined.error_code == ErrorCode.none:
                break
            assert time.monotonic() < deadline, joined
            time.sleep(0.05)
        synced, _ = call(
            s,
            SyncGroupRequest(
                group_id=GroupId(group),
                generation_id=joined.generation_id,
                member_id=joined.member_id,
                group_instance_id="static-1",
                protocol_type="consumer",
                protocol_name="range",
                assignments=(
                    SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b""),
                ),
            ),
        )
    assert synced.error_code == ErrorCode.none
    return joined.member_id, joined.generation_id


@pytest.mark.parametrize("version", VERSIONS)
def test_a_classic_group_fences_alike(broker: EmbeddedBroker, version: int) -> None:
    group = f"classic-{version}"
    member, generation = _join(broker.port, group)
    instance = "static-1" if version >= 7 else None

    def frame(**fields: Any) -> bytes:
        values: dict[str, Any] = {
            "generation": generation,
            "member_id": member,
            "instance_id": instance,
            **fields,
        }
        return commit_frame(version, group, TOPICS, **values)

    _same(broker, frame(), ErrorCode.none)
    _same(broker, frame(generation=generation + 1), ErrorCode.illegal_generation)
    _same(broker, frame(member_id="someone-else", instance_id=None), ErrorCode.unknown_member_id)
    _same(broker, frame(generation=-1, member_id="", instance_id=None), ErrorCode.unknown_member_id)
    if version >= 7:
        _same(broker, frame(member_id="someone-else"), ErrorCode.fenced_instance_id)
    missing = ErrorCode.group_id_not_found if version >= 9 else ErrorCode.illegal_generation
    _same(broker, commit_frame(version, f"nobody-{version}", TOPICS, generation=1), missing)


def _consumer_member(port: int, group: str) -> tuple[str, int]:
    """A KIP-848 member of ``group``: (member id, epoch)."""
    with socket.create_connection((HOST, port), 30) as s:
        joined, _ = call(
            s,
            ConsumerGroupHeartbeatRequest(
                group_id=GroupId(group),
                member_id="member-a",
                member_epoch=i32(0),
                rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
                subscribed_topic_names=(TopicName("t"),),
                topic_partitions=(),
            ),
        )
    assert joined.error_code == ErrorCode.none
    return joined.member_id, joined.member_epoch


def test_a_consumer_group_fences_alike(broker: EmbeddedBroker) -> None:
    member, epoch = _consumer_member(broker.port, "kip848")

    def frame(version: int, **fields: Any) -> bytes:
        values: dict[str, Any] = {"generation": epoch, "member_id": member, **fields}
        return commit_frame(version, "kip848", TOPICS, **values)

    _same(broker, frame(9), ErrorCode.none)
    _same(broker, frame(9, generation=epoch + 1), ErrorCode.stale_member_epoch)
    _same(broker, frame(9, member_id="someone-else"), ErrorCode.unknown_member_id)
    _same(broker, frame(8), ErrorCode.unsupported_version)
    _same(broker, frame(9, generation=-1, member_id=""), ErrorCode.unknown_member_id)


def test_unknown_topics_and_partitions_take_the_general_path(broker: EmbeddedBroker) -> None:
    for topics in ({"t": [0, 3]}, {"t": [0], "missing": [0]}, {"t": [-1]}):
        frame = commit_frame(9, "unknown", topics)
        fast, general = _both(broker, frame)
        assert fast is None and general is not None
        assert ErrorCode.unknown_topic_or_partition in _errors(frame, general)


def test_a_topic_named_twice_takes_the_general_path(broker: EmbeddedBroker) -> None:
    request = commit_request(9, "twice", {"t": [0]})
    twice = dataclasses.replace(request, topics=request.topics + request.topics)
    frame = encode_request(twice, correlation=77)[4:]
    fast, general = _both(broker, frame)
    assert fast is None and general is not None
    assert _errors(frame, general) == {ErrorCode.none}


def test_a_commit_through_a_connection_is_stored(broker: EmbeddedBroker) -> None:
    inner = _inner(broker)
    before = inner.stats.offset_commits
    frame = commit_frame(9, "through-a-socket", TOPICS, offset=1000)
    with socket.create_connection((HOST, broker.port), 30) as s:
        s.sendall(len(frame).to_bytes(4, "big") + frame)
        assert _errors(frame, b"\x00\x00\x00\x00" + read_frame(s)) == {ErrorCode.none}
        fetched, _ = call(
            s,
            OffsetFetchRequest(
                groups=(
                    OffsetFetchRequestGroup(group_id=GroupId("through-a-socket"), topics=None),
                ),
                require_stable=False,
            ),
        )
    offsets = {
        (t.name, p.partition_index): p.committed_offset
        for g in fetched.groups
        for t in g.topics
        for p in t.partitions
    }
    assert offsets == {("t", 0): 1000, ("t", 1): 1001, ("t", 2): 1002, ("u", 0): 1000}
    assert inner.stats.offset_commits - before == 4
