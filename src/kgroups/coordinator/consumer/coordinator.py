"""ConsumerGroupHeartbeat on the consumer groups of a shard, sans IO.

A heartbeat goes through three steps, as in Kafka's group coordinator:

1. the member joins or updates its subscription, and the group's regular
   expressions are resolved again when due (regex.py); the group epoch moves
   on when a subscription, a regex's topics or the subscribed topics'
   metadata changed;
2. when the group epoch is past the assignment epoch, the server-side
   assignor computes a new target assignment for the whole group;
3. the member takes one reconciliation step towards its target.

Each change is a record, applied at once through the table's ``replay`` (as
loading applies it), and returned for the shard to append. A stable member
of a stable group writes nothing: its heartbeat is a few dict lookups and a
timer write.

Timers (a member's session, and its rebalance timeout while it has
partitions to revoke) are deadlines on the caller's clock: the shell asks
``next_deadline()`` and calls ``expire(now_ms)``.

The checks made before anything is written are in heartbeat_checks.py, the
target assignment in target_assignment.py, the member's metadata record in
member_metadata.py, the regexes' records in regex_refresh.py, a
reconciliation step's in reconciliation_step.py, and what members leaving
and a group's deletion write in member_removal.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer.config import ConsumerGroupConfig
from kgroups.coordinator.consumer.group import ConsumerGroup
from kgroups.coordinator.consumer.heartbeat_checks import (
    heartbeating_member,
    leaving_member,
    validate,
)
from kgroups.coordinator.consumer.heartbeat_messages import (
    HeartbeatAnswer,
    HeartbeatError,
    HeartbeatRequest,
)
from kgroups.coordinator.consumer.member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupMember,
    MemberState,
)
from kgroups.coordinator.consumer.member_metadata import heartbeat_metadata, same_metadata
from kgroups.coordinator.consumer.member_removal import (
    delete_empty_group,
    fence_member,
    next_group_epoch,
    replace_member,
)
from kgroups.coordinator.consumer.reconciliation_step import reconcile_member
from kgroups.coordinator.consumer.records import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    ConsumerGroupKey,
    ConsumerGroupValue,
    CurrentMemberAssignmentValue,
    GroupKey,
    GroupMetadataValue,
    MemberKey,
    MemberMetadataValue,
    encode_record,
)
from kgroups.coordinator.consumer.regex import regexes_due
from kgroups.coordinator.consumer.regex_refresh import drop_unused_regex, refresh_regexes
from kgroups.coordinator.consumer.table import ConsumerGroupTable
from kgroups.coordinator.consumer.target_assignment import target_assignment
from kgroups.coordinator.consumer.timer_keys import REBALANCE, ConsumerTimerKey, session_key
from kgroups.coordinator.consumer.topics import TopicsView, metadata_hash
from kgroups.coordinator.consumer_assignors import EMPTY_ASSIGNMENT, assignor, assignors
from kgroups.coordinator.timers import TimerQueue

Record = tuple[bytes, bytes | None]


class ConsumerGroupCoordinator:
    def __init__(
        self,
        config: ConsumerGroupConfig | None = None,
        table: ConsumerGroupTable | None = None,
        new_member_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self.config = config or ConsumerGroupConfig()
        self.table = table if table is not None else ConsumerGroupTable()
        self.timers: TimerQueue[ConsumerTimerKey, int] = TimerQueue()
        self._assignors = assignors(self.config.assignors)
        self._new_member_id = new_member_id
        self._records: list[Record] = []
        self.removed_from: set[str] = set()
        """Groups that lost a member since the caller last cleared this (a
        consumer group left with classic-protocol members only may become classic)."""

    # -- records -------------------------------------------------------------

    def _emit(self, key: ConsumerGroupKey, value: ConsumerGroupValue | None) -> None:
        self._records.append(encode_record(key, value))
        self.table.replay(key, value)

    def _take_records(self) -> list[Record]:
        records, self._records = self._records, []
        return records

    def assignor_name(self, group: ConsumerGroup) -> str:
        """The server assignor the group's next target assignment uses (what
        ConsumerGroupDescribe shows)."""
        return assignor(group.preferred_assignor(), self._assignors).name

    # -- heartbeat -----------------------------------------------------------

    def heartbeat(
        self, request: HeartbeatRequest, topics: TopicsView, now_ms: int
    ) -> tuple[list[Record], HeartbeatAnswer]:
        """The records to append (already applied) and the answer to send once
        they are durable."""
        try:
            validate(request, self._assignors)
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                answer = self._leave(request, topics)
            else:
                answer = self._heartbeat(request, topics, now_ms)
        except HeartbeatError as e:
            # Errors are raised before the first record: nothing to undo.
            assert not self._records
            return [], HeartbeatAnswer(error_code=e.code, error_message=str(e))
        return self._take_records(), answer

    def heartbeat_unchanged(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        client_id: str,
        client_host: str,
        topics: TopicsView,
        now_ms: int,
    ) -> int | None:
        """A heartbeat that carries nothing but its member id and epoch (every
        other field null or -1), taken without building a request: the
        heartbeat interval to answer with, when ``heartbeat`` would write
        nothing and answer the member its own epoch and no assignment; else
        None (and nothing changed). Only the session deadline moves, as there."""
        group = self.table.get(group_id)
        if group is None or group.group_epoch != group.assignment_epoch:
            return None
        member = group.members.get(member_id)
        if (
            member is None
            or member.member_epoch != member_epoch
            or member_epoch <= 0
            or not member.is_reconciled_to(group.assignment_epoch)
            or member.classic is not None
            or member.client_id != client_id
            or member.client_host != client_host
            or group.topics_version_seen != topics.version
            or (
                group.subscribed_regexes()
                and regexes_due(group, topics, now_ms, self.config.regex_refresh_interval_ms)
            )
        ):
            return None
        self.schedule_session(group_id, member, now_ms)
        return self.config.heartbeat_interval_for(group_id)

    def _group(self, group_id: str, create: bool) -> ConsumerGroup:
        group = self.table.get(group_id)
        if group is None:
            if not create:
                raise HeartbeatError(
                    ErrorCode.group_id_not_found, f"Consumer group {group_id} not found."
                )
            group = ConsumerGroup(group_id)  # in the table with its first record
        return group

    def _heartbeat(
        self, request: HeartbeatRequest, topics: TopicsView, now_ms: int
    ) -> HeartbeatAnswer:
        group_id = request.group_id
        joining = request.member_epoch == 0
        group = self._group(group_id, create=joining)
        member_id = request.member_id or self._new_member_id()
        member, replaced = heartbeating_member(group, request, member_id, self.config.max_size)

        # Validation done: from here on, records.
        if replaced is not None:
            member = self._replace(group, replaced, member_id)
            group = self.table.groups[group_id]
        elif member is None:
            member = ConsumerGroupMember(member_id)

        # 1. The member's subscription, and the group epoch.
        old_regex = member.subscribed_topic_regex
        bump = self._write_member(group, member, heartbeat_metadata(member, request))
        group = self.table.groups[group_id]  # created by the first record
        member = group.members[member_id]
        if old_regex and old_regex != member.subscribed_topic_regex:
            drop_unused_regex(group, old_regex, self._emit)
        # 2. The target assignment.
        self._advance(group, bump, topics, now_ms)

        # 3. One reconciliation step.
        old_assigned = member.assigned_partitions
        if not member.is_reconciled_to(group.assignment_epoch):
            reconcile_member(
                group, member, request.owned_partitions, now_ms, self._emit, self.timers
            )

        self.schedule_session(group_id, member, now_ms)
        full = joining or (
            request.rebalance_timeout_ms != -1
            and (
                request.subscribed_topic_names is not None
                or request.subscribed_topic_regex is not None
            )
            and request.owned_partitions is not None
        )
        changed = member.assigned_partitions is not old_assigned and (
            member.assigned_partitions != old_assigned
        )
        return HeartbeatAnswer(
            member_id=member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.config.heartbeat_interval_for(group.group_id),
            assignment=member.assigned_partitions if full or changed else None,
        )

    def _advance(self, group: ConsumerGroup, bump: bool, topics: TopicsView, now_ms: int) -> None:
        """Move the group epoch on when a subscription (``bump``), a regex's
        resolution or the subscribed topics changed, then compute the target
        assignment if it lags."""
        if group.subscribed_regexes():
            interval_ms = self.config.regex_refresh_interval_ms
            bump |= refresh_regexes(group, topics, now_ms, interval_ms, self._emit)
        if bump or group.topics_version_seen != topics.version:
            group.topics_version_seen = topics.version
            new_hash = metadata_hash(group.subscribed_topic_names(), topics)
            if bump or new_hash != group.metadata_hash:
                self._emit(
                    GroupKey(GROUP_METADATA, group.group_id),
                    GroupMetadataValue(group.group_epoch + 1, new_hash),
                )
        if group.group_epoch > group.assignment_epoch:
            # The target assignment for the group epoch: the members' changed
            # targets, then the assignment epoch.
            for key, value in target_assignment(group, topics, self._assignors):
                self._emit(key, value)

    def schedule_session(self, group_id: str, member: ConsumerGroupMember, now_ms: int) -> None:
        """A classic-protocol member keeps the session timeout of its JoinGroup."""
        timeout = (
            self.config.session_timeout_for(group_id)
            if member.classic is None
            else member.classic.session_timeout_ms
        )
        self.timers.schedule(session_key(group_id, member.member_id), now_ms + timeout, 0)

    def _write_member(
        self, group: ConsumerGroup, member: ConsumerGroupMember, value: MemberMetadataValue
    ) -> bool:
        """Write the member's metadata if anything changed; whether its
        subscription changed (or it is new)."""
        new = member.member_id not in group.members
        if not new and same_metadata(member, value):
            return False
        subscription_changed = new or (
            value.subscribed_topic_names != member.subscribed_topic_names
            or value.subscribed_topic_regex != member.subscribed_topic_regex
        )
        self._emit(MemberKey(MEMBER_METADATA, group.group_id, member.member_id), value)
        return subscription_changed

    def _replace(
        self, group: ConsumerGroup, old: ConsumerGroupMember, member_id: str
    ) -> ConsumerGroupMember:
        """A static member rejoining under a new member id takes over the old
        one's assignment, at epoch 0."""
        replace_member(self.table, group, old, member_id, self._emit, self.timers)
        return self.table.groups[group.group_id].members[member_id]

    # -- leaving and fencing -------------------------------------------------

    def _leave(self, request: HeartbeatRequest, topics: TopicsView) -> HeartbeatAnswer:
        group = self._group(request.group_id, create=False)
        member = leaving_member(group, request)
        if (
            request.instance_id is not None
            and request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
        ):
            # Gone for now: it keeps its partitions until its session
            # times out or its replacement arrives.
            self._emit(
                MemberKey(CURRENT_MEMBER_ASSIGNMENT, group.group_id, member.member_id),
                CurrentMemberAssignmentValue(
                    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                    member.previous_member_epoch,
                    int(member.state),
                    member.assigned_partitions,
                    EMPTY_ASSIGNMENT,  # nothing left to revoke
                ),
            )
            return HeartbeatAnswer(
                member_id=member.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
            )
        self._fence(group, member.member_id, topics)
        return HeartbeatAnswer(member_id=request.member_id, member_epoch=request.member_epoch)

    def _fence(self, group: ConsumerGroup, member_id: str, topics: TopicsView) -> None:
        """Remove the member; the others get its partitions."""
        self.removed_from.add(group.group_id)
        fence_member(group, member_id, topics, self._emit, self.timers)

    def fence_now(self, group_id: str, member_id: str, topics: TopicsView) -> list[Record]:
        """The member's session ends now (a fault a test injects): fenced; the
        records to append (already applied)."""
        group = self.table.get(group_id)
        if group is not None and member_id in group.members:
            self._fence(group, member_id, topics)
        return self._take_records()

    def bump_group_epoch(self, group_id: str, topics: TopicsView) -> list[Record]:
        """The group epoch moves on, as when a subscription changes: every
        member reconciles to a new assignment epoch (a fault a test injects)."""
        group = self.table.get(group_id)
        if group is not None:
            next_group_epoch(group, topics, self._emit)
        return self._take_records()

    # -- timers --------------------------------------------------------------

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def expire(self, now_ms: int, topics: TopicsView) -> list[Record]:
        """Fence every member whose session or rebalance timeout is due; the
        records to append (already applied)."""
        while (due := self.timers.pop_due(now_ms)) is not None:
            key, epoch = due
            group = self.table.get(key.group_id)
            member = None if group is None else group.members.get(key.member_id)
            if group is None or member is None:
                continue
            if key.kind == REBALANCE and member.member_epoch != epoch:
                continue  # it moved on since the timer was set
            self._fence(group, key.member_id, topics)
        return self._take_records()

    def on_loaded(self, now_ms: int) -> None:
        """After replaying a partition's records: start every member's session
        (and rebalance timeout while it has partitions to revoke)."""
        for group in self.table.groups.values():
            for member in group.members.values():
                self.schedule_session(group.group_id, member, now_ms)
                if member.state is MemberState.UNREVOKED_PARTITIONS:
                    self.timers.schedule(
                        ConsumerTimerKey(REBALANCE, group.group_id, member.member_id),
                        now_ms + member.rebalance_timeout_ms,
                        member.member_epoch,
                    )

    # -- deletion ------------------------------------------------------------

    def delete_group(self, group_id: str) -> list[Record]:
        """The tombstones of an empty group (DeleteGroups, or offset expiry)."""
        group = self.table.get(group_id)
        if group is None:
            return []
        if group.members:
            raise HeartbeatError(ErrorCode.non_empty_group, f"Group {group_id} is not empty.")
        delete_empty_group(group, self._emit)
        return self._take_records()
