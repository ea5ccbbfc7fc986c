"""A group coordinator shard's parts (built in shard_parts.py), and the life
of its ``__consumer_offsets`` partition as the shell drives it.

Sans-IO: every entry point takes the current time and returns a Result —
records to append to this partition as one batch, and the replies to send
once they are durable. Nothing here reads a clock, does IO or keeps tasks;
the shell drives timers through ``next_deadline_ms`` and ``on_timer``.

State is rebuilt from the partition by ``replay`` (one call per record, in
log order) and ``finish_load``. Live handlers apply the records they emit
through that same ``replay`` path. Each call journals what it changes, so a
batch that fails to append is rolled back to a snapshot (rollback.py,
call_journal.py). Timers fire through due_operations.py, transaction markers
reach pending offsets through txn_batches.py, and faults a test injects go
through injected_faults.py.

The requests themselves are GroupCoordinatorShard's (shard.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kio.schema.errors import ErrorCode

from kgroups.coordinator.call_journal import CallJournal
from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.consumer import ConsumerGroupConfig, TopicsView
from kgroups.coordinator.consumer.records import is_consumer_group_key
from kgroups.coordinator.consumer_messages import TopicNames
from kgroups.coordinator.consumer_side import ConsumerSide
from kgroups.coordinator.due_operations import DueOperations
from kgroups.coordinator.effects import Effects
from kgroups.coordinator.injected_faults import InjectedFaults
from kgroups.coordinator.result import AppendToken, Result
from kgroups.coordinator.shard_parts import ShardParts
from kgroups.coordinator.share import ShareEvents, ShareGroupConfig
from kgroups.coordinator.share.records import is_share_group_key
from kgroups.coordinator.turn import Turn
from kgroups.coordinator.views import (
    GroupView,
    ShareGroupView,
    group_view,
    share_group_view,
)


class ShardPartition:
    """What a GroupCoordinatorShard is made of, wired once, and the calls
    that drive its partition rather than answer a group's request. A base
    class rather than a part the shard holds, so that a request reaches
    the table, the journal and the loading flag in one attribute lookup."""

    def __init__(
        self,
        partition: int,
        config: CoordinatorConfig,
        *,
        partition_exists: Callable[[str, int], bool],
        new_member_id: Callable[[str], str] | None = None,
        consumer_config: ConsumerGroupConfig | None = None,
        topics: TopicsView | None = None,
        topic_name: TopicNames = lambda _topic_id: None,
        share_config: ShareGroupConfig | None = None,
        share_events: ShareEvents | None = None,
    ) -> None:
        self.partition = partition
        self.config = config
        self._loading = False
        self._retention_armed = False
        self._parts = parts = ShardParts(
            config,
            partition_exists,
            new_member_id,
            consumer_config,
            topics,
            topic_name,
            share_config,
            share_events,
        )
        # The parts a request, a load or a timer uses, one attribute lookup
        # away; the rarer calls find theirs in ``_parts``.
        self._table = parts.table
        self._timers = parts.timers
        self._membership = parts.membership
        self._txn = parts.txn
        self._offsets = parts.offsets
        self._txn_batches = parts.txn_batches
        self._consumer = parts.consumer
        self._share = parts.share
        self._classic_members = parts.classic_members
        self._topics = parts.topics
        self._calls = calls = CallJournal(parts, self._arm_retention)
        # Bound once: the journal costs a request no call more than before.
        self._begin = calls.begin
        self._begin_without_records = calls.begin_without_records
        self._begin_membership = calls.begin_membership
        self._guard_if_in_flight = guard = calls.guard_if_in_flight
        self._result = calls.result
        self._in_flight = calls.in_flight
        self._consumer_side = consumer_side = ConsumerSide(parts, guard)
        self._due = DueOperations(parts, consumer_side, guard)
        self._faults = InjectedFaults(parts, calls, consumer_side)

    @property
    def loading(self) -> bool:
        return self._loading

    def _arm_retention(self, now_ms: int) -> None:
        """The first call that tells the time starts the periodic sweep."""
        self._retention_armed = True
        self._due.arm_retention(now_ms)

    # -- snapshots, for metrics and tools ---------------------------------

    def groups(self) -> Iterator[GroupView]:
        """A snapshot of every group, for metrics and tools."""
        for group in list(self._table):
            yield group_view(group)

    def share_groups(self) -> list[ShareGroupView]:
        """A snapshot of every share group, for metrics."""
        return [share_group_view(g) for g in self._share.table.groups.values()]

    def group(self, group_id: str) -> GroupView | None:
        group = self._table.get(group_id)
        return None if group is None else group_view(group)

    # -- faults a test injects (injected_faults.py) -------------------------

    def force_rebalance(self, group_id: str, now_ms: int) -> Result | None:
        """The group rebalances now; None if it has no members."""
        return self._faults.force_rebalance(group_id, now_ms)

    def expire_member(self, group_id: str, member_id: str, now_ms: int) -> Result | None:
        """The member's session times out now; None if it is not a member."""
        return self._faults.expire_member(group_id, member_id, now_ms)

    # -- timers ------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        deadlines = (
            self._timers.next_deadline(),
            self._consumer.next_deadline(),
            self._share.next_deadline(),
        )
        return min((d for d in deadlines if d is not None), default=None)

    def nothing_due_before(self, ms: int) -> bool:
        """A cheap check that no timer is due before ``ms``."""
        return (
            self._timers.nothing_due_before(ms)
            and self._consumer.timers.nothing_due_before(ms)
            and self._share.timers.nothing_due_before(ms)
        )

    def on_timer(self, now_ms: int) -> Result:
        """Fire every delayed operation due at ``now_ms`` (due_operations.py)."""
        fx = Effects()
        self._begin()
        self._due.fire(Turn(now_ms, fx))
        return self._result(fx, now_ms)

    # -- loading and storage -----------------------------------------------

    def begin_load(self) -> None:
        """The partition's log is being read: answer requests as loading until ``finish_load``."""
        self._loading = True

    def replay(self, key: bytes, value: bytes | None, producer_id: int = -1) -> None:
        """Apply one record of the partition, in log order.

        ``producer_id`` >= 0: the record is in that producer's transactional
        batch, and its offset stays pending until ``replay_marker``."""
        self._loading = True
        if is_consumer_group_key(key):
            self._consumer.table.replay_bytes(key, value)
            return
        if is_share_group_key(key):
            self._share.table.replay_bytes(key, value)
            return
        if (producer_id >= 0 or self._txn) and self._txn_batches.replay(key, value, producer_id):
            return
        self._table.apply(key, value)

    def finish_load(self, now_ms: int) -> Result:
        """Loading is over: every member's session starts now."""
        self._loading = False
        fx = Effects()
        turn = Turn(now_ms, fx)
        self._begin()
        for group in list(self._table):
            self._membership.on_loaded(group, turn)
        self._consumer.on_loaded(now_ms)
        self._share.on_loaded(now_ms)
        return self._result(fx, now_ms)

    def unload(self, now_ms: int) -> Result:
        """This partition moved to another coordinator: answer what is parked.

        The shard is finished afterwards; its timers are dropped.
        """
        fx = Effects()
        for group in list(self._table):
            self._membership.on_unloaded(group, fx)
        self._timers.clear()
        self._consumer.timers.clear()
        self._share.timers.clear()
        return self._calls.unjournaled_result(fx)

    def append_durable(self, append_token: AppendToken | None) -> None:
        """The batch of ``append_token`` (and every batch before it) is durable."""
        if append_token is not None:
            self._calls.append_durable(append_token.batch_id)

    def append_failed(
        self, append_token: AppendToken | None, error: ErrorCode, now_ms: int
    ) -> Result:
        """The batch of ``append_token`` was not stored: take it back, answer with ``error``.

        The groups it changed go back to their snapshot, with every later call
        still in flight that touched them; the requests of all these calls get
        ``error`` (see rollback.py). Called late, once a later batch was
        reported durable, it only answers the batch's requests.
        """
        if append_token is not None:
            return self._calls.append_failed(append_token, error, now_ms)
        self._begin()
        return self._result(Effects(), now_ms)
