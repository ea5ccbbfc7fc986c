"""The shard's groups, and the one path by which records change them.

``apply`` is what loading calls for every record of the partition, and what
the live handlers call for every record they emit (with the very bytes they
hand to the shell), so a group rebuilt from the log is the group that was
live when the records were written.

A GroupMetadata record is a snapshot of the group after a rebalance (or on
becoming Empty). Applied to a live group it settles it: assignments are
taken from the record and the group moves to Stable (or Empty). While
loading, a record may follow one whose group went through rebalances that
were never stored; then the group is rebuilt from the record, as Kafka's
loader does.

While ``journal`` is set (the shard sets it for each call) every change
through the table is journaled first, so that it can be taken back; see
rollback.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.member import Member
from kgroups.coordinator.offsets import CommittedOffset, TopicPartition
from kgroups.coordinator.records import (
    NO_TIMESTAMP,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)
from kgroups.coordinator.rollback import Snapshot
from kgroups.coordinator.state import GroupState, can_transition


class GroupTable:
    def __init__(self) -> None:
        self._groups: dict[str, ClassicGroup] = {}
        # Distinguishes a group from an earlier one with the same id, so a
        # timer set for the old group never acts on the new.
        self._incarnations = itertools.count(1)
        self.journal: Snapshot | None = None

    def __len__(self) -> int:
        return len(self._groups)

    def __iter__(self) -> Iterator[ClassicGroup]:
        return iter(self._groups.values())

    def __contains__(self, group_id: str) -> bool:
        return group_id in self._groups

    def get(self, group_id: str) -> ClassicGroup | None:
        return self._groups.get(group_id)

    def create(self, group_id: str, timestamp_ms: int | None) -> ClassicGroup:
        """A new Empty group, in memory only until something about it is stored."""
        group = ClassicGroup(group_id, GroupState.EMPTY, timestamp_ms)
        self._add(group)
        return group

    def drop(self, group: ClassicGroup) -> None:
        """Forget a group that nothing stored refers to (a failed first commit)."""
        if self._groups.get(group.group_id) is group:
            self.guard(group.group_id)  # the object itself turns Dead
            group.transition_to(GroupState.DEAD, group.state_timestamp_ms)
            del self._groups[group.group_id]

    def _add(self, group: ClassicGroup) -> None:
        self._journal_slot(group.group_id)
        group.incarnation = next(self._incarnations)
        self._groups[group.group_id] = group

    # -- taking changes back -------------------------------------------------

    def guard(self, group_id: str) -> None:
        """The call is about to change this group's members: copy it first
        (once per call), members and offsets included."""
        journal = self.journal
        if journal is not None and group_id not in journal.copies:
            group = self._groups.get(group_id)
            journal.copies[group_id] = None if group is None else group.copy()

    def put(self, group_id: str, group: ClassicGroup | None) -> None:
        """Make ``group`` (a journaled object or copy) the group under its id again."""
        if group is None:
            self._groups.pop(group_id, None)
        else:
            self._groups[group_id] = group

    def put_offset(
        self, group_id: str, partition: TopicPartition, offset: CommittedOffset | None
    ) -> None:
        """Put back a journaled offset of the group now under ``group_id``."""
        group = self._groups.get(group_id)
        if group is None:
            return
        if offset is None:
            group.offsets.pop(partition, None)
        else:
            group.offsets[partition] = offset

    def _journal_slot(self, group_id: str) -> None:
        journal = self.journal
        if journal is not None and group_id not in journal.slots:
            journal.slots[group_id] = self._groups.get(group_id)

    # -- the replay path ---------------------------------------------------

    def apply(self, key: bytes, value: bytes | None) -> None:
        decoded = decode_key(key)
        if isinstance(decoded, OffsetCommitKey):
            offset = None if value is None else decode_offset_commit_value(value)
            self.apply_offset(
                decoded.group,
                TopicPartition(decoded.topic, decoded.partition),
                None if offset is None else CommittedOffset.from_record(offset),
            )
        elif isinstance(decoded, GroupMetadataKey):
            metadata = None if value is None else decode_group_metadata_value(value)
            self.apply_group_metadata(decoded.group, metadata)
        # Other key versions belong to other coordinators (e.g. KIP-848 groups).

    def apply_offset(
        self, group_id: str, partition: TopicPartition, offset: CommittedOffset | None
    ) -> None:
        group = self._groups.get(group_id)
        journal = self.journal
        if journal is not None and (group_id, partition) not in journal.offsets:
            journal.offsets[group_id, partition] = (
                None if group is None else group.offsets.get(partition)
            )
        if offset is not None:
            if group is None:
                # Offsets without group metadata make a simple (Empty) group.
                group = self.create(group_id, None)
            group.offsets[partition] = offset
            return
        if group is None:
            return
        group.offsets.pop(partition, None)
        if (
            group.is_in(GroupState.EMPTY)
            and not group.offsets
            and not group.members
            and group.generation_id == 0
        ):
            # A group never stored as metadata exists only through its offsets;
            # no tombstone follows for it (Kafka writes none at generation 0).
            self._remove(group)

    def apply_offsets(
        self, group_id: str, offsets: list[tuple[TopicPartition, CommittedOffset]]
    ) -> None:
        """``apply_offset`` of each of one group's new offsets, in order, with
        the group looked up and the journal read once."""
        if not offsets:
            return
        group = self._groups.get(group_id)
        journal = self.journal
        if journal is not None:
            journaled = journal.offsets
            stored = {} if group is None else group.offsets
            for partition, _offset in offsets:
                key = (group_id, partition)
                if key not in journaled:
                    journaled[key] = stored.get(partition)
        if group is None:
            # Offsets without group metadata make a simple (Empty) group.
            group = self.create(group_id, None)
        group.offsets.update(offsets)

    def apply_group_metadata(self, group_id: str, value: GroupMetadataValue | None) -> None:
        group = self._groups.get(group_id)
        if value is None:
            if group is None:
                return
            self._remove(group)
            if group.offsets:
                # Offsets outlive their group's metadata; they form a simple group.
                survivor = self.create(group_id, None)
                survivor.offsets = group.offsets
            return
        target = GroupState.STABLE if value.members else GroupState.EMPTY
        timestamp = (
            None if value.current_state_timestamp == NO_TIMESTAMP else value.current_state_timestamp
        )
        if group is None or not (group.is_in(target) or can_transition(group.state, target)):
            rebuilt = ClassicGroup(group_id, target, timestamp)
            if group is not None:
                rebuilt.offsets = group.offsets
            self._add(rebuilt)
            group = rebuilt
        _settle(group, value, target, timestamp)

    def _remove(self, group: ClassicGroup) -> None:
        self.guard(group.group_id)  # the object itself turns Dead
        group.transition_to(GroupState.DEAD, group.state_timestamp_ms)
        del self._groups[group.group_id]


def _settle(
    group: ClassicGroup,
    value: GroupMetadataValue,
    target: GroupState,
    timestamp: int | None,
) -> None:
    """Make the group's stored fields those of the record."""
    protocol = value.protocol or ""
    stored = {m.member_id: m for m in value.members}
    for member_id in [m for m in group.members if m not in stored]:
        group.remove(member_id)
    for stored_member in value.members:
        member = group.members.get(stored_member.member_id)
        if member is None:
            group.add(_member_from_record(stored_member, value.protocol_type, protocol))
            continue
        member.assignment = stored_member.assignment
        if (
            protocol in member.protocol_names
            and member.metadata(protocol) == stored_member.subscription
        ):
            continue
        group.update_member(
            member,
            ((protocol, stored_member.subscription),),
            _rebalance_timeout(stored_member),
            stored_member.session_timeout,
        )
    group.generation_id = value.generation
    group.protocol_type = value.protocol_type or None
    group.protocol_name = value.protocol
    group.leader_id = value.leader
    if group.is_in(target):
        group.state_timestamp_ms = timestamp
    else:
        group.transition_to(target, timestamp)
    group.subscribed_topics = group.compute_subscribed_topics()


def _rebalance_timeout(member: MemberMetadataValue) -> int:
    # Version 0 records had no rebalance timeout; it was the session timeout.
    return member.session_timeout if member.rebalance_timeout == -1 else member.rebalance_timeout


def _member_from_record(member: MemberMetadataValue, protocol_type: str, protocol: str) -> Member:
    return Member(
        member_id=member.member_id,
        group_instance_id=member.group_instance_id,
        client_id=member.client_id,
        client_host=member.client_host,
        rebalance_timeout_ms=_rebalance_timeout(member),
        session_timeout_ms=member.session_timeout,
        protocol_type=protocol_type,
        protocols=((protocol, member.subscription),),
        assignment=member.assignment,
    )
