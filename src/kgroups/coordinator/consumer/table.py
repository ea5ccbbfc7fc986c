"""Every consumer group of a shard, rebuilt from its records by ``replay``.

``replay`` is the only way the groups change: the heartbeat path emits
records and applies them through it, and loading ``__consumer_offsets``
after a restart applies the stored ones through it, so both end in the
same state.
"""

from __future__ import annotations

from kgroups.coordinator.consumer.group import NO_ASSIGNMENT_EPOCH, ConsumerGroup
from kgroups.coordinator.consumer.records import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    PARTITION_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    TARGET_ASSIGNMENT_METADATA,
    ConsumerGroupKey,
    ConsumerGroupValue,
    CurrentMemberAssignmentValue,
    GroupKey,
    GroupMetadataValue,
    MemberKey,
    MemberMetadataValue,
    RegularExpressionKey,
    RegularExpressionValue,
    TargetAssignmentMemberValue,
    TargetAssignmentMetadataValue,
    decode_record,
)


class InconsistentRecords(RuntimeError):
    """Records in an order the coordinator never writes (a corrupt log)."""


class ConsumerGroupTable:
    __slots__ = ("groups",)

    def __init__(self) -> None:
        self.groups: dict[str, ConsumerGroup] = {}

    def get(self, group_id: str) -> ConsumerGroup | None:
        return self.groups.get(group_id)

    def replay_bytes(self, key: bytes, value: bytes | None) -> None:
        self.replay(*decode_record(key, value))

    def replay(self, key: ConsumerGroupKey, value: ConsumerGroupValue | None) -> None:
        group = self.groups.get(key.group_id)
        if group is None:
            if value is None:
                return  # a tombstone for a group already gone
            group = self.groups[key.group_id] = ConsumerGroup(key.group_id)
        if isinstance(key, MemberKey):
            self._replay_member(group, key, value)
        elif isinstance(key, RegularExpressionKey):
            if value is None:
                group.regexes.pop(key.regex, None)
            else:
                assert isinstance(value, RegularExpressionValue)
                group.regexes[key.regex] = (value.topics, value.version, value.timestamp)
        else:
            self._replay_group(group, key, value)

    def _replay_group(
        self, group: ConsumerGroup, key: GroupKey, value: ConsumerGroupValue | None
    ) -> None:
        record_type = key.record_type
        if record_type == GROUP_METADATA:
            if value is None:
                if not group.is_empty_of_state() or group.assignment_epoch != NO_ASSIGNMENT_EPOCH:
                    raise InconsistentRecords(
                        f"group {group.group_id} deleted while it still has members"
                    )
                del self.groups[group.group_id]
                return
            assert isinstance(value, GroupMetadataValue)
            group.group_epoch = value.epoch
            group.metadata_hash = value.metadata_hash
        elif record_type == TARGET_ASSIGNMENT_METADATA:
            if value is None:
                group.set_assignment_epoch(NO_ASSIGNMENT_EPOCH)
            else:
                assert isinstance(value, TargetAssignmentMetadataValue)
                group.set_assignment_epoch(value.assignment_epoch)
        elif record_type == PARTITION_METADATA:
            # Kafka 4.0's subscription metadata: 4.1 and this coordinator
            # keep a hash in the group metadata instead. A group loaded
            # from 4.0 records has no hash, so its first heartbeat
            # recomputes the hash and moves the epoch on once.
            pass

    def _replay_member(
        self, group: ConsumerGroup, key: MemberKey, value: ConsumerGroupValue | None
    ) -> None:
        record_type = key.record_type
        if record_type == MEMBER_METADATA:
            if value is not None:
                assert isinstance(value, MemberMetadataValue)
            group.apply_member_metadata(key.member_id, value)
        elif record_type == CURRENT_MEMBER_ASSIGNMENT:
            if value is not None:
                assert isinstance(value, CurrentMemberAssignmentValue)
            group.apply_current_assignment(key.member_id, value)
        elif record_type == TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                group.apply_target_assignment(key.member_id, None)
            else:
                assert isinstance(value, TargetAssignmentMemberValue)
                group.apply_target_assignment(key.member_id, value.partitions)
