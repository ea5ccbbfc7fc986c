"""The records the coordinator writes, built from its in-memory groups."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.offsets import CommittedOffset, TopicPartition
from kgroups.coordinator.records import (
    NO_LEADER_EPOCH,
    NO_TIMESTAMP,
    GroupMetadataValue,
    MemberMetadataValue,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    encode_offset_commit_value_v3,
)
from kgroups.coordinator.result import Record


def group_metadata_value(
    group: ClassicGroup, assignment: Mapping[str, bytes]
) -> GroupMetadataValue:
    """The group as stored after a rebalance: every member with its assignment."""
    protocol = group.protocol_name
    if group.members and protocol is None:
        raise ValueError(f"group {group.group_id} has members but no protocol")
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=protocol,
        leader=group.leader_id,
        current_state_timestamp=(
            NO_TIMESTAMP if group.state_timestamp_ms is None else group.state_timestamp_ms
        ),
        members=tuple(
            MemberMetadataValue(
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                client_id=member.client_id,
                client_host=member.client_host,
                rebalance_timeout=member.rebalance_timeout_ms,
                session_timeout=member.session_timeout_ms,
                subscription=member.metadata(protocol or ""),
                assignment=assignment[member.member_id],
            )
            for member in group.members.values()
        ),
    )


def group_metadata_record(value: GroupMetadataValue, group_id: str) -> Record:
    return encode_group_metadata_key(group_id), encode_group_metadata_value(value)


def group_tombstone(group_id: str) -> Record:
    return encode_group_metadata_key(group_id), None


# A committer writes the same keys commit after commit: each is encoded once.
@lru_cache(maxsize=1 << 16)
def offset_key(group_id: str, partition: TopicPartition) -> bytes:
    return encode_offset_commit_key(group_id, partition.topic, partition.partition)


def offset_record(group_id: str, partition: TopicPartition, offset: CommittedOffset) -> Record:
    key = offset_key(group_id, partition)
    if offset.expire_timestamp_ms is None:  # v3, written straight from the fields
        leader_epoch = offset.leader_epoch if offset.leader_epoch >= 0 else NO_LEADER_EPOCH
        return key, encode_offset_commit_value_v3(
            offset.offset, leader_epoch, offset.metadata, offset.commit_timestamp_ms
        )
    return key, encode_offset_commit_value(offset.to_record())


def offset_tombstone(group_id: str, partition: TopicPartition) -> Record:
    return offset_key(group_id, partition), None
