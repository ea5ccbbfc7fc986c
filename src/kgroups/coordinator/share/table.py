"""Every share group of a shard, rebuilt from its records by ``replay``.

As for consumer groups (consumer/table.py): the heartbeat path applies the
records it writes through ``replay``, loading applies the stored ones
through it, and while ``journal`` is a list each replayed record first
journals the record that restores its key; ``undo`` replays those backwards.
"""

from __future__ import annotations

from kgroups.coordinator.share.group import ShareGroup, ShareGroupMember
from kgroups.coordinator.share.records import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    STATE_PARTITION_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    TARGET_ASSIGNMENT_METADATA,
    CurrentMemberAssignmentValue,
    GroupMetadataValue,
    MemberMetadataValue,
    ShareGroupKey,
    ShareGroupValue,
    StatePartitionMetadataValue,
    TargetAssignmentMemberValue,
    TargetAssignmentMetadataValue,
    decode_record,
)

Change = tuple[ShareGroupKey, ShareGroupValue | None]


class ShareGroupTable:
    __slots__ = ("groups", "journal")

    def __init__(self) -> None:
        self.groups: dict[str, ShareGroup] = {}
        self.journal: list[Change] | None = None

    def get(self, group_id: str) -> ShareGroup | None:
        return self.groups.get(group_id)

    def replay_bytes(self, key: bytes, value: bytes | None) -> None:
        self.replay(*decode_record(key, value))

    def undo(self, journal: list[Change]) -> None:
        saved, self.journal = self.journal, None
        try:
            for key, value in reversed(journal):
                self.replay(key, value)
        finally:
            self.journal = saved

    def replay(self, key: ShareGroupKey, value: ShareGroupValue | None) -> None:
        if self.journal is not None:
            self.journal.append((key, self._current(key)))
        kind = key.record_type
        group = self.groups.get(key.group_id)
        if kind == GROUP_METADATA:
            if value is None:
                self.groups.pop(key.group_id, None)
                return
            assert isinstance(value, GroupMetadataValue)
            group = self._group(key.group_id)
            group.group_epoch = value.epoch
            group.metadata_hash = value.metadata_hash
        elif kind == TARGET_ASSIGNMENT_METADATA:
            if value is not None and group is not None:
                assert isinstance(value, TargetAssignmentMetadataValue)
                group.assignment_epoch = value.assignment_epoch
        elif kind == STATE_PARTITION_METADATA:
            if group is not None or value is not None:
                group = self._group(key.group_id)
                assert value is None or isinstance(value, StatePartitionMetadataValue)
                group.state_partitions = None if value is None else value.raw
        else:
            self._replay_member(key, value)

    def _replay_member(self, key: ShareGroupKey, value: ShareGroupValue | None) -> None:
        member_id = key.member_id
        assert member_id is not None
        group = self.groups.get(key.group_id)
        if value is None:
            if group is None:
                return
            if key.record_type == MEMBER_METADATA:
                group.members.pop(member_id, None)
            elif key.record_type == TARGET_ASSIGNMENT_MEMBER:
                group.target_assignment.pop(member_id, None)
            return
        group = self._group(key.group_id)
        if isinstance(value, TargetAssignmentMemberValue):
            group.target_assignment[member_id] = value.partitions
            return
        member = group.members.get(member_id)
        if member is None:
            member = group.members[member_id] = ShareGroupMember(member_id)
        if isinstance(value, MemberMetadataValue):
            member.rack_id = value.rack_id
            member.client_id = value.client_id
            member.client_host = value.client_host
            member.subscribed_topic_names = value.subscribed_topic_names
        else:
            assert isinstance(value, CurrentMemberAssignmentValue)
            member.member_epoch = value.member_epoch
            member.previous_member_epoch = value.previous_member_epoch
            member.assigned_partitions = value.assigned_partitions

    def _group(self, group_id: str) -> ShareGroup:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        return group

    def _current(self, key: ShareGroupKey) -> ShareGroupValue | None:
        """The value that puts ``key`` back as it is now (None: absent)."""
        group = self.groups.get(key.group_id)
        if group is None:
            return None
        kind = key.record_type
        if kind == GROUP_METADATA:
            return GroupMetadataValue(group.group_epoch, group.metadata_hash)
        if kind == TARGET_ASSIGNMENT_METADATA:
            return TargetAssignmentMetadataValue(group.assignment_epoch)
        if kind == STATE_PARTITION_METADATA:
            raw = group.state_partitions
            return None if raw is None else StatePartitionMetadataValue(raw)
        assert key.member_id is not None
        if kind == TARGET_ASSIGNMENT_MEMBER:
            target = group.target_assignment.get(key.member_id)
            return None if target is None else TargetAssignmentMemberValue(target)
        member = group.members.get(key.member_id)
        if member is None:
            return None
        if kind == MEMBER_METADATA:
            return MemberMetadataValue(
                member.rack_id, member.client_id, member.client_host, member.subscribed_topic_names
            )
        assert kind == CURRENT_MEMBER_ASSIGNMENT
        return CurrentMemberAssignmentValue(
            member.member_epoch, member.previous_member_epoch, 0, member.assigned_partitions
        )
