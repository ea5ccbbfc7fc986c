"""Group API requests the coordinator tests send, built once."""

from __future__ import annotations

from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

from kgroups.protocol.types import GroupId, TopicName, i32, i64


def commit_request(
    group: str, offset: int, topic: str = "t", partition: int = 0
) -> OffsetCommitRequest:
    """A simple member-less commit (generation -1) of one partition."""
    return OffsetCommitRequest(
        group_id=GroupId(group),
        generation_id_or_member_epoch=i32(-1),
        member_id="",
        group_instance_id=None,
        topics=(
            OffsetCommitRequestTopic(
                name=TopicName(topic),
                partitions=(
                    OffsetCommitRequestPartition(
                        partition_index=i32(partition),
                        committed_offset=i64(offset),
                        committed_leader_epoch=i32(-1),
                        committed_metadata="",
                    ),
                ),
            ),
        ),
    )
