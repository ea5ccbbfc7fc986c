"""ShareGroupHeartbeat on the share groups of a shard, sans IO.

A heartbeat takes the steps of a consumer group's (consumer/coordinator.py)
without the revocations: the member's metadata and the group epoch, the
target assignment when it lags (assignor.py), then the member takes its
target at once. Each change is a record applied through the table's
``replay`` and returned for the shard to append.

A member that leaves or whose session expires is removed: its records'
tombstones and a new group epoch (the others get its partitions at their
next heartbeat). One whose session expired is gone without a word: the
broker is told (``ShareEvents.member_expired``) to release the records it
had acquired and drop its share session; a deleted group's share partitions
go too (``group_deleted``). One that leaves closes its share
session itself, acknowledging what it holds (its acknowledgements may
arrive after its leave, so nothing is released for it here).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol

from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer.topics import TopicsView, metadata_hash
from kgroups.coordinator.consumer_assignors.spec import EMPTY_ASSIGNMENT, Assignment
from kgroups.coordinator.share.assignor import assign
from kgroups.coordinator.share.config import ShareGroupConfig
from kgroups.coordinator.share.group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    STABLE_MEMBER_STATE,
    ShareGroup,
    ShareGroupMember,
)
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
    Record,
    ShareGroupKey,
    ShareGroupValue,
    StatePartitionMetadataValue,
    StatePartitions,
    TargetAssignmentMemberValue,
    TargetAssignmentMetadataValue,
    TopicPartitions,
    encode_record,
)
from kgroups.coordinator.share.table import ShareGroupTable
from kgroups.coordinator.timers import TimerQueue


@dataclass(frozen=True, slots=True)
class ShareHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None
    client_id: str
    client_host: str


@dataclass(frozen=True, slots=True)
class ShareHeartbeatAnswer:
    error_code: ErrorCode = ErrorCode.none
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


class ShareEvents(Protocol):
    """What the broker's share partitions hear of the share groups."""

    def member_expired(self, group_id: str, member_id: str) -> None:
        """Its session ended: release what it acquired, drop its share session."""
        ...

    def group_deleted(self, group_id: str) -> None:
        """The group's share partitions' state goes."""
        ...


class ShareHeartbeatError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


SessionKey = tuple[str, str]


class ShareGroupCoordinator:
    def __init__(
        self,
        config: ShareGroupConfig | None = None,
        events: ShareEvents | None = None,
    ) -> None:
        self.config = config or ShareGroupConfig()
        self.table = ShareGroupTable()
        self.timers: TimerQueue[SessionKey, int] = TimerQueue()
        self._records: list[Record] = []
        # What the broker's share partitions must hear of (None: nothing).
        self.events = events

    def _emit(self, key: ShareGroupKey, value: ShareGroupValue | None) -> None:
        self._records.append(encode_record(key, value))
        self.table.replay(key, value)

    def _take_records(self) -> list[Record]:
        records, self._records = self._records, []
        return records

    # -- heartbeat -----------------------------------------------------------

    def heartbeat(
        self, request: ShareHeartbeatRequest, topics: TopicsView, now_ms: int
    ) -> tuple[list[Record], ShareHeartbeatAnswer]:
        """The records to append (already applied) and the answer to send once
        they are durable."""
        try:
            _validate(request)
            if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                answer = self._leave(request, topics)
            else:
                answer = self._heartbeat(request, topics, now_ms)
        except ShareHeartbeatError as e:
            assert not self._records
            return [], ShareHeartbeatAnswer(error_code=e.code, error_message=str(e))
        return self._take_records(), answer

    def _heartbeat(
        self, request: ShareHeartbeatRequest, topics: TopicsView, now_ms: int
    ) -> ShareHeartbeatAnswer:
        group_id, member_id = request.group_id, request.member_id
        joining = request.member_epoch == 0
        group = self.table.get(group_id)
        if group is None and not joining:
            raise ShareHeartbeatError(
                ErrorCode.group_id_not_found, f"Share group {group_id} not found."
            )
        member = None if group is None else group.members.get(member_id)
        if member is None and not joining:
            raise ShareHeartbeatError(
                ErrorCode.unknown_member_id,
                f"Member {member_id} is not a member of group {group_id}.",
            )
        if member is not None and not joining:
            _check_epoch(member, request.member_epoch)
        if member is None and group is not None and len(group.members) >= self.config.max_size:
            raise ShareHeartbeatError(
                ErrorCode.group_max_size_reached,
                f"The share group has reached its maximum capacity of "
                f"{self.config.max_size} members.",
            )
        # Validation done: from here on, records.
        bump = self._write_member(group_id, member, request)
        group = self.table.groups[group_id]
        member = group.members[member_id]
        old_assigned = member.assigned_partitions
        self._advance(group, bump, topics)
        target = group.target_assignment.get(member_id, {})
        if member.member_epoch != group.assignment_epoch or dict(target) != dict(
            member.assigned_partitions
        ):
            self._emit(
                ShareGroupKey(CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
                CurrentMemberAssignmentValue(
                    group.assignment_epoch,
                    member.member_epoch,
                    STABLE_MEMBER_STATE,
                    group.target_assignment.get(member_id, EMPTY_ASSIGNMENT),
                ),
            )
        self.schedule_session(group_id, member_id, now_ms)
        changed = dict(member.assigned_partitions) != dict(old_assigned)
        return ShareHeartbeatAnswer(
            member_id=member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.config.heartbeat_interval_for(group_id),
            assignment=member.assigned_partitions if joining or changed else None,
        )

    def _write_member(
        self, group_id: str, member: ShareGroupMember | None, request: ShareHeartbeatRequest
    ) -> bool:
        """Write the member's metadata if it is new or changed; whether its
        subscription changed."""
        subscribed = request.subscribed_topic_names
        if member is None:
            value = MemberMetadataValue(
                request.rack_id, request.client_id, request.client_host, subscribed or ()
            )
            self._emit(ShareGroupKey(MEMBER_METADATA, group_id, request.member_id), value)
            return True
        value = MemberMetadataValue(
            request.rack_id if request.rack_id is not None else member.rack_id,
            request.client_id,
            request.client_host,
            subscribed if subscribed is not None else member.subscribed_topic_names,
        )
        old = MemberMetadataValue(
            member.rack_id, member.client_id, member.client_host, member.subscribed_topic_names
        )
        if value == old:
            return False
        self._emit(ShareGroupKey(MEMBER_METADATA, group_id, request.member_id), value)
        return value.subscribed_topic_names != old.subscribed_topic_names

    def _advance(self, group: ShareGroup, bump: bool, topics: TopicsView) -> None:
        if bump or group.topics_version_seen != topics.version:
            group.topics_version_seen = topics.version
            new_hash = metadata_hash(group.subscribed_topic_names(), topics)
            if bump or new_hash != group.metadata_hash:
                self._emit(
                    ShareGroupKey(GROUP_METADATA, group.group_id),
                    GroupMetadataValue(group.group_epoch + 1, new_hash),
                )
        if group.group_epoch > group.assignment_epoch:
            self._assign(group, topics)

    def _assign(self, group: ShareGroup, topics: TopicsView) -> None:
        existing: dict[str, tuple[uuid.UUID, int]] = {}
        for name in group.subscribed_topic_names():
            info = topics.lookup(name)
            if info is not None:
                existing[name] = (info.topic_id, info.partitions)
        targets = assign(
            {m.member_id: frozenset(m.subscribed_topic_names) for m in group.members.values()},
            group.target_assignment,
            existing,
        )
        for member_id, target in targets.items():
            if dict(group.target_assignment.get(member_id, {})) != dict(target):
                self._emit(
                    ShareGroupKey(TARGET_ASSIGNMENT_MEMBER, group.group_id, member_id),
                    TargetAssignmentMemberValue(target),
                )
        self._emit(
            ShareGroupKey(TARGET_ASSIGNMENT_METADATA, group.group_id),
            TargetAssignmentMetadataValue(group.group_epoch),
        )

    def schedule_session(self, group_id: str, member_id: str, now_ms: int) -> None:
        deadline = now_ms + self.config.session_timeout_for(group_id)
        self.timers.schedule((group_id, member_id), deadline, 0)

    # -- leaving -------------------------------------------------------------

    def _leave(self, request: ShareHeartbeatRequest, topics: TopicsView) -> ShareHeartbeatAnswer:
        group = self.table.get(request.group_id)
        if group is None:
            raise ShareHeartbeatError(
                ErrorCode.group_id_not_found, f"Group {request.group_id} not found."
            )
        if request.member_id not in group.members:
            raise ShareHeartbeatError(
                ErrorCode.unknown_member_id,
                f"Member {request.member_id} is not a member of group {request.group_id}.",
            )
        self._remove(group, request.member_id, topics)
        return ShareHeartbeatAnswer(
            member_id=request.member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH
        )

    def _remove(
        self, group: ShareGroup, member_id: str, topics: TopicsView, expired: bool = False
    ) -> None:
        group_id = group.group_id
        self._emit(ShareGroupKey(CURRENT_MEMBER_ASSIGNMENT, group_id, member_id), None)
        self._emit(ShareGroupKey(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), None)
        self._emit(ShareGroupKey(MEMBER_METADATA, group_id, member_id), None)
        self.timers.cancel((group_id, member_id))
        self._emit(
            ShareGroupKey(GROUP_METADATA, group_id),
            GroupMetadataValue(
                group.group_epoch + 1, metadata_hash(group.subscribed_topic_names(), topics)
            ),
        )
        if expired and self.events is not None:
            self.events.member_expired(group_id, member_id)

    # -- timers --------------------------------------------------------------

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def expire(self, now_ms: int, topics: TopicsView) -> list[Record]:
        """Remove every member whose session is due; the records to append
        (already applied)."""
        while (due := self.timers.pop_due(now_ms)) is not None:
            (group_id, member_id), _ = due
            group = self.table.get(group_id)
            if group is not None and member_id in group.members:
                self._remove(group, member_id, topics, expired=True)
        return self._take_records()

    def on_loaded(self, now_ms: int) -> None:
        """After replaying a partition's records: start every member's session."""
        for group in self.table.groups.values():
            for member_id in group.members:
                self.schedule_session(group.group_id, member_id, now_ms)

    # -- start offsets set by an admin ----------------------------------------

    def offsets_changed(self, group_id: str, topics: TopicsView) -> list[Record]:
        """AlterShareGroupOffsets or DeleteShareGroupOffsets on an empty share
        group (made if missing): a new group epoch, as Kafka writes; the
        records (already applied)."""
        group = self.table.get(group_id)
        epoch = 0 if group is None else group.group_epoch
        names = frozenset() if group is None else group.subscribed_topic_names()
        self._emit(
            ShareGroupKey(GROUP_METADATA, group_id),
            GroupMetadataValue(epoch + 1, metadata_hash(names, topics)),
        )
        return self._take_records()

    # -- share partitions' state (record 15) ----------------------------------

    def state_partitions(self, group_id: str) -> StatePartitions:
        group = self.table.get(group_id)
        return StatePartitions.decode(None if group is None else group.state_partitions)

    def state_to_initialize(
        self, group_id: str, topics: TopicsView, now_ms: int
    ) -> tuple[list[Record], int, list[TopicPartitions]]:
        """The partitions of the group's target assignment whose share state
        is not initialized yet, and the group epoch to initialize them at
        (their state epoch); those not yet marked initializing are marked
        so (record 15), as Kafka's group coordinator does before it sends
        InitializeShareGroupState. The records are already applied."""
        group = self.table.get(group_id)
        if group is None:
            return [], 0, []
        state = StatePartitions.decode(group.state_partitions)
        done = {(t.topic_id, p) for t in state.initialized for p in t.partitions}
        pending = {(t.topic_id, p) for t in state.initializing for p in t.partitions}
        names = {
            info.topic_id: name
            for name in group.subscribed_topic_names()
            if (info := topics.lookup(name)) is not None
        }
        wanted: dict[uuid.UUID, set[int]] = {}
        for assignment in group.target_assignment.values():
            for topic_id, partitions in assignment.items():
                if topic_id in names:
                    wanted.setdefault(topic_id, set()).update(
                        p for p in partitions if (topic_id, p) not in done
                    )
        todo = [
            TopicPartitions(topic_id, names[topic_id], tuple(sorted(ps)), now_ms)
            for topic_id, ps in sorted(wanted.items(), key=lambda kv: str(kv[0]))
            if ps
        ]
        new = [t for t in todo if any((t.topic_id, p) not in pending for p in t.partitions)]
        if new:
            initializing = _merged(state.initializing, new)
            self._write_state(
                group_id, StatePartitions(initializing, state.initialized, state.deleting)
            )
        return self._take_records(), group.group_epoch, todo

    def state_initialized(self, group_id: str, done: list[TopicPartitions]) -> list[Record]:
        """Their share state is initialized: from initializing to initialized."""
        group = self.table.get(group_id)
        if group is None or not done:
            return []
        state = StatePartitions.decode(group.state_partitions)
        finished = {(t.topic_id, p) for t in done for p in t.partitions}
        initializing = _without(state.initializing, finished)
        initialized = _merged(state.initialized, done)
        self._write_state(group_id, StatePartitions(initializing, initialized, state.deleting))
        return self._take_records()

    def state_forgotten(self, group_id: str, topic_ids: set[uuid.UUID]) -> list[Record]:
        """The share state of these topics was deleted (DeleteShareGroupOffsets)."""
        group = self.table.get(group_id)
        if group is None or group.state_partitions is None:
            return []
        state = StatePartitions.decode(group.state_partitions)
        self._write_state(
            group_id,
            StatePartitions(
                tuple(t for t in state.initializing if t.topic_id not in topic_ids),
                tuple(t for t in state.initialized if t.topic_id not in topic_ids),
                tuple(d for d in state.deleting if d[0] not in topic_ids),
            ),
        )
        return self._take_records()

    def _write_state(self, group_id: str, state: StatePartitions) -> None:
        self._emit(
            ShareGroupKey(STATE_PARTITION_METADATA, group_id),
            StatePartitionMetadataValue(state.encode()),
        )

    # -- deletion ------------------------------------------------------------

    def delete_group(self, group_id: str) -> list[Record]:
        """The tombstones of an empty group (DeleteGroups)."""
        group = self.table.get(group_id)
        if group is None:
            return []
        if group.members:
            raise ShareHeartbeatError(ErrorCode.non_empty_group, f"Group {group_id} is not empty.")
        for member_id in list(group.target_assignment):
            self._emit(ShareGroupKey(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), None)
        if group.state_partitions is not None:
            self._emit(ShareGroupKey(STATE_PARTITION_METADATA, group_id), None)
        self._emit(ShareGroupKey(TARGET_ASSIGNMENT_METADATA, group_id), None)
        self._emit(ShareGroupKey(GROUP_METADATA, group_id), None)
        if self.events is not None:
            self.events.group_deleted(group_id)
        return self._take_records()


def _check_epoch(member: ShareGroupMember, received: int) -> None:
    """A member may come back with its previous epoch: the answer that moved
    it on may have been lost."""
    if received > member.member_epoch:
        raise ShareHeartbeatError(
            ErrorCode.fenced_member_epoch,
            f"The share group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). "
            "The member must abandon all its partitions and rejoin.",
        )
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise ShareHeartbeatError(
            ErrorCode.fenced_member_epoch,
            f"The share group member has a smaller member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). "
            "The member must abandon all its partitions and rejoin.",
        )


def _validate(request: ShareHeartbeatRequest) -> None:
    """Kafka's checks of a ShareGroupHeartbeat, before any state is read (the
    group id is checked before the request reaches a shard)."""
    if request.rack_id is not None and not request.rack_id.strip():
        raise ShareHeartbeatError(ErrorCode.invalid_request, "RackId can't be empty.")
    if not request.member_id.strip():
        raise ShareHeartbeatError(ErrorCode.invalid_request, "MemberId can't be empty.")
    if request.member_epoch == 0:
        if not request.subscribed_topic_names:
            raise ShareHeartbeatError(
                ErrorCode.invalid_request, "SubscribedTopicNames must be set in first request."
            )
    elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise ShareHeartbeatError(ErrorCode.invalid_request, "MemberEpoch is invalid.")


def _merged(
    topics: tuple[TopicPartitions, ...], more: list[TopicPartitions]
) -> tuple[TopicPartitions, ...]:
    by_id = {t.topic_id: t for t in topics}
    for t in more:
        kept = by_id.get(t.topic_id)
        if kept is None:
            by_id[t.topic_id] = t
        else:
            partitions = tuple(sorted(set(kept.partitions) | set(t.partitions)))
            by_id[t.topic_id] = TopicPartitions(
                t.topic_id, t.topic_name, partitions, kept.create_timestamp
            )
    return tuple(by_id.values())


def _without(
    topics: tuple[TopicPartitions, ...], gone: set[tuple[uuid.UUID, int]]
) -> tuple[TopicPartitions, ...]:
    out = []
    for t in topics:
        partitions = tuple(p for p in t.partitions if (t.topic_id, p) not in gone)
        if partitions:
            out.append(TopicPartitions(t.topic_id, t.topic_name, partitions, t.create_timestamp))
    return tuple(out)
