"""Share group administration over the wire (KIP-932): ShareGroupDescribe,
DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets,
each sent to the group's coordinator. The calls behind `kgroups share-groups`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kio.schema.alter_share_group_offsets.v0 import AlterShareGroupOffsetsRequest
from kio.schema.alter_share_group_offsets.v0.request import (
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from kio.schema.delete_share_group_offsets.v0 import DeleteShareGroupOffsetsRequest
from kio.schema.delete_share_group_offsets.v0.request import DeleteShareGroupOffsetsRequestTopic
from kio.schema.describe_share_group_offsets.v1 import DescribeShareGroupOffsetsRequest
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequestGroup,
)
from kio.schema.share_group_describe.v1 import ShareGroupDescribeRequest
from kio.schema.share_group_describe.v1.response import DescribedGroup as DescribedShareGroup

from kgroups.client.connection import BrokerConnection
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.types import GroupId, TopicName, i32, i64

__all__ = [
    "DescribedShareGroup",
    "ShareOffset",
    "alter_share_group_offsets",
    "delete_share_group_offsets",
    "describe_share_group",
    "describe_share_group_offsets",
]


@dataclass(frozen=True, slots=True)
class ShareOffset:
    topic: str
    partition: int
    start_offset: int
    """The share partition's start offset (SPSO); -1 when it has no state."""
    lag: int | None
    """Records from the start offset to the high watermark not yet done (KIP-1226);
    None from a broker without DescribeShareGroupOffsets v1."""


def _raise(error: ErrorCode, message: str | None, what: str) -> None:
    if error != ErrorCode.none:
        raise KafkaError(error, message or what)


async def describe_share_group(conn: BrokerConnection, group: str) -> DescribedShareGroup:
    response = await conn.send(
        ShareGroupDescribeRequest(group_ids=(GroupId(group),), include_authorized_operations=False),
        version=conn.version_for(apis.SHARE_GROUP_DESCRIBE, 1, 1),
    )
    described: DescribedShareGroup = response.groups[0]
    _raise(described.error_code, described.error_message, f"describing share group {group!r}")
    return described


async def describe_share_group_offsets(conn: BrokerConnection, group: str) -> list[ShareOffset]:
    """Every share partition the group has state for."""
    version = conn.version_for(apis.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1)
    response = await conn.send(
        DescribeShareGroupOffsetsRequest(
            groups=(DescribeShareGroupOffsetsRequestGroup(group_id=GroupId(group), topics=None),)
        ),
        version=version,
    )
    answer = response.groups[0]
    _raise(answer.error_code, answer.error_message, f"describing offsets of {group!r}")
    out = []
    for t in answer.topics:
        for p in t.partitions:
            _raise(p.error_code, p.error_message, f"{t.topic_name}-{p.partition_index}")
            lag = int(p.lag) if version >= 1 and p.lag >= 0 else None
            out.append(ShareOffset(t.topic_name, p.partition_index, p.start_offset, lag))
    return sorted(out, key=lambda o: (o.topic, o.partition))


async def alter_share_group_offsets(
    conn: BrokerConnection, group: str, offsets: Mapping[tuple[str, int], int]
) -> None:
    """Set share partitions' start offsets (the group must be empty)."""
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append((partition, offset))
    response = await conn.send(
        AlterShareGroupOffsetsRequest(
            group_id=GroupId(group),
            topics=tuple(
                AlterShareGroupOffsetsRequestTopic(
                    topic_name=TopicName(topic),
                    partitions=tuple(
                        AlterShareGroupOffsetsRequestPartition(
                            partition_index=i32(p), start_offset=i64(o)
                        )
                        for p, o in parts
                    ),
                )
                for topic, parts in by_topic.items()
            ),
        ),
        version=conn.version_for(apis.ALTER_SHARE_GROUP_OFFSETS, 0, 0),
    )
    _raise(response.error_code, response.error_message, f"altering offsets of {group!r}")
    for t in response.responses:
        for p in t.partitions:
            _raise(p.error_code, p.error_message, f"{t.topic_name}-{p.partition_index}")


async def delete_share_group_offsets(
    conn: BrokerConnection, group: str, topics: list[str]
) -> dict[str, KafkaError | None]:
    """Forget topics' share partitions (the group must be empty): each topic's outcome."""
    response = await conn.send(
        DeleteShareGroupOffsetsRequest(
            group_id=GroupId(group),
            topics=tuple(
                DeleteShareGroupOffsetsRequestTopic(topic_name=TopicName(t)) for t in topics
            ),
        ),
        version=conn.version_for(apis.DELETE_SHARE_GROUP_OFFSETS, 0, 0),
    )
    _raise(response.error_code, response.error_message, f"deleting offsets of {group!r}")
    return {
        t.topic_name: None
        if t.error_code == ErrorCode.none
        else KafkaError(t.error_code, t.error_message)
        for t in response.responses
    }
