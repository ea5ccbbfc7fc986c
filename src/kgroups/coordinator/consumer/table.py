"""Every consumer group of a shard, rebuilt from its records by ``replay``.

``replay`` is the only way the groups change: the heartbeat path emits
records and applies them through it, and loading ``__consumer_offsets``
after a restart applies the stored ones through it, so both end in the
same state.

Taking changes back (a batch that failed to append) is replay too: while
``journal`` is a list, each replayed record first journals the record that
would restore its key as it was (its previous value, or a tombstone), read
from the state in O(1). ``undo(journal)`` replays those in reverse order.
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


Change = tuple[ConsumerGroupKey, ConsumerGroupValue | None]


class ConsumerGroupTable:
    __slots__ = ("groups", "journal")

    def __init__(self) -> None:
        self.groups: dict[str, ConsumerGroup] = {}
        self.journal: list[Change] | None = None

    def undo(self, journal: list[Change]) -> None:
        """Put back the state as it was before the journaled records."""
        saved, self.journal = self.journal, None
        try:
            for key, value in reversed(journal):
                self.replay(key, value)
                group = self.groups.get(key.group_id)
                if group is not None:
                    # What the undone records saw of the topics is forgotten too.
                    group.topics_version_seen = -1
                    group.regexes_version_seen = -1
        finally:
            self.journal = saved

    def current(self, key: ConsumerGroupKey) -> ConsumerGroupValue | None:
        """The value of ``key`` the state holds: what replaying would restore it."""
        group = self.groups.get(key.group_id)
        if group is None:
            return None
        if isinstance(key, MemberKey):
            member = group.members.get(key.member_id)
            if key.record_type == TARGET_ASSIGNMENT_MEMBER:
                target = group.target_assignment.get(key.member_id)
                return None if target is None else TargetAssignmentMemberValue(target)
            if member is None:
                return None
            if key.record_type == MEMBER_METADATA:
                return MemberMetadataValue(
                    instance_id=member.instance_id,
                    rack_id=member.rack_id,
                    client_id=member.client_id,
                    client_host=member.client_host,
                    subscribed_topic_names=member.subscribed_topic_names,
                    subscribed_topic_regex=member.subscribed_topic_regex,
                    rebalance_timeout_ms=member.rebalance_timeout_ms,
                    server_assignor=member.server_assignor,
                    classic_member_metadata=member.classic,
                )
            if member.member_epoch == -1 and not member.assigned_partitions:
                return None  # what a current assignment tombstone leaves
            return CurrentMemberAssignmentValue(
                member.member_epoch,
                member.previous_member_epoch,
                int(member.state),
                member.assigned_partitions,
                member.partitions_pending_revocation,
            )
        if isinstance(key, RegularExpressionKey):
            resolved = group.regexes.get(key.regex)
            return None if resolved is None else RegularExpressionValue(*resolved)
        if key.record_type == GROUP_METADATA:
            return GroupMetadataValue(group.group_epoch, group.metadata_hash)
        if key.record_type == TARGET_ASSIGNMENT_METADATA:
            if group.assignment_epoch == NO_ASSIGNMENT_EPOCH:
                return None
            return TargetAssignmentMetadataValue(group.assignment_epoch)
        return None

    def get(self, group_id: str) -> ConsumerGroup | None:
        return self.groups.get(group_id)

    def replay_bytes(self, key: bytes, value: bytes | None) -> None:
        self.replay(*decode_record(key, value))

    def replay(self, key: ConsumerGroupKey, value: ConsumerGroupValue | None) -> None:
        group = self.groups.get(key.group_id)
        journal = self.journal
        if group is None:
            if value is None:
                return  # a tombstone for a group already gone
            if journal is not None:  # undone last: the group did not exist
                journal.append((GroupKey(GROUP_METADATA, key.group_id), None))
            group = self.groups[key.group_id] = ConsumerGroup(key.group_id)
        if journal is not None:
            journal.append((key, self.current(key)))
        if isinstance(key, MemberKey):
            self._replay_member(group, key, value)
        elif isinstance(key, RegularExpressionKey):
            if value is None:
                group.apply_regex(key.regex, None)
            else:
                assert isinstance(value, RegularExpressionValue)
                group.apply_regex(key.regex, (value.topics, value.version, value.timestamp))
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
