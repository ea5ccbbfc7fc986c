"""A group changing kind, for the shard (KIP-848 migration): a classic group
with members becomes a consumer group when a consumer-protocol member joins
it, and a consumer group left with classic-protocol members only becomes a
classic group again. The member conversions themselves are in
consumer/classic_members.py; this side swaps the group between the shard's
two tables, journaled like any change."""

from __future__ import annotations

from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.consumer import (
    ConsumerGroupCoordinator,
    HeartbeatAnswer,
    HeartbeatError,
    HeartbeatRequest,
    TopicsView,
)
from kgroups.coordinator.consumer.classic_members import ClassicProtocolMembers
from kgroups.coordinator.consumer_messages import heartbeat_error
from kgroups.coordinator.effects import Effects
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.group_records import group_metadata_record, group_tombstone
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.membership import Membership
from kgroups.coordinator.parked_requests import answer_parked
from kgroups.coordinator.turn import Turn


class GroupConversion:
    def __init__(
        self,
        table: GroupTable,
        membership: Membership,
        consumer: ConsumerGroupCoordinator,
        classic_members: ClassicProtocolMembers,
        topics: TopicsView,
        config: CoordinatorConfig,
        guard: Callable[[str], None],
    ) -> None:
        self._table = table
        self._membership = membership
        self._consumer = consumer
        self._classic_members = classic_members
        self._topics = topics
        self._config = config
        # Journals a classic group whose changes build on a batch in flight.
        self._guard = guard

    def upgrade_and_heartbeat(
        self, classic: ClassicGroup, request: HeartbeatRequest, fx: Effects, now_ms: int
    ) -> HeartbeatAnswer:
        """A consumer-protocol member joining a classic group with members: the
        group becomes a consumer group, if Kafka's conditions allow."""
        not_consumer = heartbeat_error(
            ErrorCode.group_id_not_found, f"Group {classic.group_id} is not a consumer group."
        )
        if request.member_epoch != 0 or not self._classic_members.may_upgrade(classic):
            return not_consumer
        consumer = self._consumer
        journal = consumer.table.journal
        assert journal is not None  # the call is journaled (the shard's _begin)
        mark = len(journal)
        timers = dict(consumer.timers.journal or {})
        try:
            converted = self._classic_members.upgrade(classic, self._topics, now_ms)
        except HeartbeatError as e:
            return heartbeat_error(e.code, str(e))
        records, answer = consumer.heartbeat(request, self._topics, now_ms)
        if answer.error_code is not ErrorCode.none:
            # Refused: the group stays classic, as if never converted.
            consumer.table.undo(journal[mark:])
            del journal[mark:]
            for key, entry in (consumer.timers.journal or {}).items():
                if key not in timers:
                    consumer.timers.restore(key, entry)
            return answer
        self._guard(classic.group_id)
        for member in classic.members.values():
            # A rebalance in progress will not complete: rejoin (the new way).
            answer_parked(classic, member, ErrorCode.rebalance_in_progress, fx)
        fx.records.append(group_tombstone(classic.group_id))
        self._table.apply_group_metadata(classic.group_id, None)
        fx.records.extend(converted)
        fx.records.extend(records)
        return answer

    def downgrade(self, turn: Turn) -> None:
        """Consumer groups that lost a member and hold classic-protocol members
        only become classic groups, if the policy allows (Kafka then rebalances)."""
        removed, self._consumer.removed_from = self._consumer.removed_from, set()
        for group_id in removed:
            group = self._consumer.table.get(group_id)
            if group is None or not self._classic_members.may_downgrade(
                group, self._config.max_size
            ):
                continue
            records, value = self._classic_members.downgrade(group, turn.now)
            turn.fx.records.extend(records)  # already applied
            turn.fx.records.append(group_metadata_record(value, group_id))
            self._guard(group_id)
            self._table.apply_group_metadata(group_id, value)
            classic = self._table.get(group_id)
            assert classic is not None
            self._membership.on_converted(classic, turn)
