"""What a shard does when its timers are due: a classic member's session or
a rebalance's join or sync deadline ends (membership.py), the periodic sweep
expires offsets, and consumer-group members' session or rebalance timeouts
fence them (consumer_side.py)."""

from __future__ import annotations

from collections.abc import Callable

from kgroups.coordinator.consumer_side import ConsumerSide
from kgroups.coordinator.delayed_operations import (
    RETENTION_KEY,
    JoinDeadline,
    MemberDeadline,
    RetentionCheck,
    SyncDeadline,
)
from kgroups.coordinator.shard_parts import ShardParts
from kgroups.coordinator.timers import TimerKey
from kgroups.coordinator.turn import Turn


class DueOperations:
    def __init__(
        self, parts: ShardParts, consumer_side: ConsumerSide, guard: Callable[[str], None]
    ) -> None:
        self._parts = parts
        self._consumer_side = consumer_side
        self._retention_check_interval_ms = parts.config.offsets_retention_check_interval_ms
        # Journals a classic group whose changes build on a batch in flight.
        self._guard = guard

    def arm_retention(self, now_ms: int) -> None:
        """Start the periodic sweep of expired offsets."""
        self._parts.timers.schedule(
            RETENTION_KEY, now_ms + self._retention_check_interval_ms, RetentionCheck()
        )

    def fire(self, turn: Turn) -> None:
        """Every delayed operation due at ``turn.now``."""
        now_ms = turn.now
        parts = self._parts
        timers = parts.timers
        membership = parts.membership
        fired: set[TimerKey] = set()
        while True:
            due = timers.pop_due(now_ms)
            if due is None:
                break
            key, operation = due
            if key in fired:
                # Re-armed for no later than now by its own firing: leave it for
                # the next call rather than spin here.
                timers.schedule(key, now_ms, operation)
                break
            fired.add(key)
            if not isinstance(operation, RetentionCheck):
                self._guard(key.group_id)
            if isinstance(operation, MemberDeadline):
                membership.on_member_deadline(key.group_id, key.member_id, operation, turn)
            elif isinstance(operation, JoinDeadline):
                membership.on_join_deadline(key.group_id, operation, turn)
            elif isinstance(operation, SyncDeadline):
                membership.on_sync_deadline(key.group_id, operation, turn)
            else:
                subscribed = {
                    g: group.subscribed_topic_names()
                    for g, group in parts.consumer.table.groups.items()
                    if group.members
                }
                parts.removal.expire_offsets(now_ms, turn.fx, subscribed)
                timers.schedule(key, now_ms + self._retention_check_interval_ms, operation)
        self._consumer_side.expire(turn)
        turn.fx.records.extend(parts.share.expire(now_ms, parts.topics))  # already applied
