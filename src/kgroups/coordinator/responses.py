"""Building the response entities, with the quirks of older API versions.

Responses are always the newest version's entities; the shell writes them
with the writer of the version the client spoke, which drops newer fields.
What older versions need beyond that — a non-null protocol name before
JoinGroup v7, one flattened error before LeaveGroup v3 — is applied here, by
the rules of protocol/versions.py.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.schema.join_group.v9.response import JoinGroupResponse, JoinGroupResponseMember
from kio.schema.leave_group.v5.response import LeaveGroupResponse, MemberResponse
from kio.schema.offset_commit.v9.response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from kio.schema.sync_group.v5.response import SyncGroupResponse
from kio.static.primitive import i32Timedelta

from kgroups.coordinator.commit_request import CommitTopic
from kgroups.coordinator.offsets import TopicPartition
from kgroups.protocol.types import TopicName, i32
from kgroups.protocol.versions import join_protocol_name, leave_error

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))
NO_GENERATION = -1
NO_LEADER = ""
UNKNOWN_MEMBER_ID = ""


def join_response(
    api_version: int,
    error: ErrorCode,
    member_id: str,
    *,
    generation_id: int = NO_GENERATION,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    leader: str = NO_LEADER,
    skip_assignment: bool = False,
    members: tuple[JoinGroupResponseMember, ...] = (),
) -> JoinGroupResponse:
    return JoinGroupResponse(
        throttle_time=NO_THROTTLE,
        error_code=error,
        generation_id=i32(generation_id),
        protocol_type=protocol_type,
        protocol_name=join_protocol_name(api_version, protocol_name),
        leader=leader,
        skip_assignment=skip_assignment,
        member_id=member_id,
        members=members,
    )


def join_error(api_version: int, error: ErrorCode, member_id: str) -> JoinGroupResponse:
    return join_response(api_version, error, member_id)


def sync_response(
    error: ErrorCode,
    *,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    assignment: bytes = b"",
) -> SyncGroupResponse:
    return SyncGroupResponse(
        throttle_time=NO_THROTTLE,
        error_code=error,
        protocol_type=protocol_type,
        protocol_name=protocol_name,
        assignment=assignment,
    )


def heartbeat_response(error: ErrorCode) -> HeartbeatResponse:
    return HeartbeatResponse(throttle_time=NO_THROTTLE, error_code=error)


def leave_response(
    api_version: int, error: ErrorCode, members: tuple[MemberResponse, ...] = ()
) -> LeaveGroupResponse:
    return LeaveGroupResponse(
        throttle_time=NO_THROTTLE,
        error_code=leave_error(api_version, error, members),
        members=members,
    )


def offset_commit_response(
    outcome: Iterable[tuple[TopicPartition, ErrorCode]],
) -> OffsetCommitResponse:
    """Partitions grouped by topic, topics in the order they first appear."""
    by_topic: dict[str, list[OffsetCommitResponsePartition]] = {}
    for (topic, partition), error in outcome:
        by_topic.setdefault(topic, []).append(
            OffsetCommitResponsePartition(partition_index=i32(partition), error_code=error)
        )
    return OffsetCommitResponse(
        throttle_time=NO_THROTTLE,
        topics=tuple(
            OffsetCommitResponseTopic(name=TopicName(topic), partitions=tuple(partitions))
            for topic, partitions in by_topic.items()
        ),
    )


def commit_response(
    topics: Sequence[CommitTopic],
    error: ErrorCode,
    exceptions: Mapping[tuple[str, int], ErrorCode],
) -> OffsetCommitResponse:
    """The answer to the partitions of ``topics``: ``error``, unless ``exceptions``
    names another for a partition."""
    if not exceptions and sum(len(t.partitions) for t in topics) <= CACHED_PARTITIONS:
        layout = tuple([(t.name, tuple([p.partition_index for p in t.partitions])) for t in topics])
        return uniform_commit_response(layout, error)
    return offset_commit_response(
        (
            TopicPartition(t.name, p.partition_index),
            exceptions.get((t.name, p.partition_index), error),
        )
        for t in topics
        for p in t.partitions
    )


# A committer sends the same partitions again and again, and nearly always gets
# one error for all: the same answer, built once (entities are immutable). Only
# answers of up to CACHED_PARTITIONS partitions are kept, which bounds the memory.
CACHED_PARTITIONS = 128


@lru_cache(maxsize=1024)
def uniform_commit_response(
    layout: tuple[tuple[str, tuple[int, ...]], ...], error: ErrorCode
) -> OffsetCommitResponse:
    return offset_commit_response(
        (TopicPartition(topic, partition), error)
        for topic, partitions in layout
        for partition in partitions
    )
