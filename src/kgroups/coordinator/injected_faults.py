"""Faults a test injects into a shard (kgroups.testing, the fault admin): a
group rebalances now, or a member's session times out now; each journaled
and recorded like the event it stands for."""

from __future__ import annotations

from kgroups.coordinator.call_journal import CallJournal
from kgroups.coordinator.consumer_side import ConsumerSide
from kgroups.coordinator.effects import Effects
from kgroups.coordinator.result import Result
from kgroups.coordinator.shard_parts import ShardParts
from kgroups.coordinator.turn import Turn


class InjectedFaults:
    def __init__(self, parts: ShardParts, calls: CallJournal, consumer_side: ConsumerSide) -> None:
        self._parts = parts
        self._calls = calls
        self._consumer_side = consumer_side

    def force_rebalance(self, group_id: str, now_ms: int) -> Result | None:
        """A classic group prepares a rebalance, as when a member's metadata
        changes; a consumer group's epoch moves on. None if the group has no
        members."""
        parts = self._parts
        classic = parts.table.get(group_id)
        consumer = parts.consumer.table.get(group_id)
        if not (classic is not None and classic.members) and not (
            consumer is not None and consumer.members
        ):
            return None
        fx = Effects()
        self._calls.begin_membership(group_id)
        if classic is not None and classic.members:
            parts.membership.force_rebalance(classic, Turn(now_ms, fx))
        else:
            fx.records.extend(parts.consumer.bump_group_epoch(group_id, parts.topics))
        return self._calls.result(fx, now_ms)

    def expire_member(self, group_id: str, member_id: str, now_ms: int) -> Result | None:
        """The member's session times out now: removed from its group, which
        rebalances (a consumer group fences it). None if it is not a member."""
        parts = self._parts
        classic = parts.table.get(group_id)
        consumer = parts.consumer.table.get(group_id)
        member = None if classic is None else classic.members.get(member_id)
        if member is None and (consumer is None or member_id not in consumer.members):
            return None
        fx = Effects()
        turn = Turn(now_ms, fx)
        self._calls.begin_membership(group_id)
        if classic is not None and member is not None:
            parts.membership.expire_member(classic, member, turn)
        else:
            self._consumer_side.fence_now(group_id, member_id, turn)
        return self._calls.result(fx, now_ms)
