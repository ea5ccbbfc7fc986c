"""The group coordinator for one ``__consumer_offsets`` partition.

Sans-IO: every entry point takes the current time and returns a Result —
records to append to this partition as one batch, and the replies to send
once they are durable. Nothing here reads a clock, does IO or keeps tasks;
the shell drives timers through ``next_deadline_ms`` and ``on_timer``.

State is rebuilt from the partition by ``replay`` (one call per record, in
log order) and ``finish_load``. Live handlers apply the records they emit
through that same ``replay`` path. Between loading's first ``replay`` and
``finish_load`` requests are answered as Kafka answers a loading coordinator
(loading_answers.py).

Each call journals what it changes, so a batch that fails to append is
rolled back to a snapshot (rollback.py, call_journal.py).

The shard routes each request to the kind of group its group id names:
classic (membership.py, offset_handlers.py, offset_removal.py) or KIP-848 consumer groups
(consumer_side.py). Timers fire through due_operations.py, transaction
markers reach pending offsets through txn_batches.py.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator

from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.describe_groups.v6.request import DescribeGroupsRequest
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9.request import JoinGroupRequest
from kio.schema.leave_group.v5.request import LeaveGroupRequest
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.offset_commit.v9.request import OffsetCommitRequest
from kio.schema.offset_delete.v0.request import OffsetDeleteRequest
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup
from kio.schema.sync_group.v5.request import SyncGroupRequest
from kio.schema.txn_offset_commit.v5.request import TxnOffsetCommitRequest

import kgroups.coordinator.loading_answers as loading
from kgroups.coordinator.call_journal import CallJournal
from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.consumer import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    TopicImage,
    TopicsView,
)
from kgroups.coordinator.consumer.classic_members import ClassicProtocolMembers
from kgroups.coordinator.consumer.offsets import offset_commit_error
from kgroups.coordinator.consumer.records import is_consumer_group_key
from kgroups.coordinator.consumer_messages import (
    TopicNames,
    consumer_group_describe_response,
    consumer_heartbeat_response,
)
from kgroups.coordinator.consumer_side import ConsumerSide
from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.control_records import control_record
from kgroups.coordinator.delayed_operations import Timers
from kgroups.coordinator.due_operations import DueOperations
from kgroups.coordinator.effects import Effects
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.injected_faults import InjectedFaults
from kgroups.coordinator.member import kafka_member_id
from kgroups.coordinator.membership import Membership
from kgroups.coordinator.offset_handlers import OffsetHandlers
from kgroups.coordinator.offset_removal import OffsetRemoval
from kgroups.coordinator.responses import commit_response
from kgroups.coordinator.result import AppendToken, ProducerBatch, Result
from kgroups.coordinator.rollback import MEMBERS, OFFSETS
from kgroups.coordinator.turn import Turn
from kgroups.coordinator.txn_batches import TxnBatches
from kgroups.coordinator.txn_offsets import TransactionalOffsets
from kgroups.coordinator.views import (
    GroupView,
    describe_groups_response,
    group_view,
    list_groups_response,
)


class GroupCoordinatorShard:
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
    ) -> None:
        self.partition = partition
        self.config = config
        self._table = table = GroupTable()
        self._timers = timers = Timers()
        self._membership = membership = Membership(
            table, timers, config, new_member_id or kafka_member_id
        )
        # Offsets committed inside transactions, pending until their marker.
        self._txn = txn = TransactionalOffsets()
        self._offsets = offsets = OffsetHandlers(table, membership, config, partition_exists, txn)
        self._removal = removal = OffsetRemoval(table, config, txn)
        self._txn_batches = txn_batches = TxnBatches(txn, table)
        # KIP-848 consumer groups, beside the classic ones: a group id names
        # one or the other (a consumer group's offsets live in the classic
        # table, as those of a group without members).
        self._consumer = consumer = ConsumerGroupCoordinator(consumer_config)
        # Classic-protocol members inside consumer groups, and conversions (migration).
        self._classic_members = classic_members = ClassicProtocolMembers(consumer, topic_name)
        self._topics = topics = topics if topics is not None else TopicImage()
        self._topic_name = topic_name
        self._loading = False
        self._retention_armed = False
        self._calls = calls = CallJournal(
            table, timers, consumer, membership, txn, txn_batches, self._arm_retention
        )
        # Bound once: the journal costs a request no call more than before.
        self._begin = calls.begin
        self._begin_without_records = calls.begin_without_records
        self._begin_membership = calls.begin_membership
        self._guard_if_in_flight = guard = calls.guard_if_in_flight
        self._result = calls.result
        self._in_flight = calls.in_flight
        self._consumer_side = consumer_side = ConsumerSide(
            table, membership, offsets, consumer, classic_members, topics, config, guard
        )
        self._due = DueOperations(
            timers, membership, removal, consumer, consumer_side, config, guard
        )
        self._faults = InjectedFaults(calls, table, membership, consumer, consumer_side, topics)

    @property
    def loading(self) -> bool:
        return self._loading

    def _arm_retention(self, now_ms: int) -> None:
        """The first call that tells the time starts the periodic sweep."""
        self._retention_armed = True
        self._due.arm_retention(now_ms)

    # -- membership --------------------------------------------------------

    def join_group(self, req: JoinGroupRequest, ctx: RequestContext, now_ms: int) -> Result:
        fx = Effects()
        self._begin_membership(req.group_id)
        consumer = self._consumer.table.get(req.group_id)
        if self._loading and req.group_id:
            fx.reply(ctx.reply_to, loading.join_group(ctx.api_version, req.member_id))
        elif consumer is not None and consumer.members:
            # A classic-protocol member inside a consumer group.
            self._consumer_side.join(consumer, req, ctx, fx, now_ms)
        else:
            if consumer is not None:
                # An empty consumer group becomes a classic one, as in Kafka.
                fx.records.extend(self._consumer.delete_group(req.group_id))
            self._membership.join_group(req, ctx, Turn(now_ms, fx))
        return self._result(fx, now_ms)

    def sync_group(self, req: SyncGroupRequest, ctx: RequestContext, now_ms: int) -> Result:
        fx = Effects()
        self._begin_membership(req.group_id)
        if self._loading and req.group_id:
            fx.reply(ctx.reply_to, loading.sync_group())
        elif (consumer := self._consumer.table.get(req.group_id)) is not None:
            fx.reply(ctx.reply_to, self._classic_members.sync(consumer, req, now_ms))
        else:
            self._membership.sync_group(req, ctx, Turn(now_ms, fx))
        return self._result(fx, now_ms)

    def heartbeat(self, req: HeartbeatRequest, ctx: RequestContext, now_ms: int) -> Result:
        fx = Effects()
        self._begin_without_records((req.group_id, MEMBERS))
        if self._loading and req.group_id:
            fx.reply(ctx.reply_to, loading.heartbeat())
        elif (consumer := self._consumer.table.get(req.group_id)) is not None:
            fx.reply(ctx.reply_to, self._consumer_side.classic_heartbeat(consumer, req, now_ms))
        else:
            self._membership.heartbeat(req, ctx, Turn(now_ms, fx))
        return self._result(fx, now_ms)

    def heartbeat_now(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        now_ms: int,
    ) -> ErrorCode | None:
        """``heartbeat`` without a Result, for the shell's fast path: the
        answer, or None when the heartbeat must go through ``heartbeat``
        because its group has a batch that is not durable yet (the answer
        must wait for it, and the call be journaled with it) or it is the
        shard's first call (which arms the retention sweep)."""
        if not self._retention_armed or self._in_flight.touches((group_id, MEMBERS)):
            return None
        if self._loading and group_id:
            return ErrorCode.none
        consumer = self._consumer.table.get(group_id)
        if consumer is not None:
            # A classic-protocol member inside a consumer group: only timers change.
            return self._classic_members.heartbeat(
                consumer, member_id, group_instance_id, generation_id, now_ms, may_arm=False
            )
        return self._membership.heartbeat_error(
            group_id, member_id, group_instance_id, generation_id, now_ms
        )

    def consumer_heartbeat_now(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        client_id: str,
        client_host: str,
        now_ms: int,
    ) -> int | None:
        """``consumer_group_heartbeat`` of a stable member that carries only its
        member id and epoch, without a Result, for the shell's fast path: the
        heartbeat interval to answer with, or None when the heartbeat must go
        through ``consumer_group_heartbeat`` (for the reasons of
        ``heartbeat_now``, or because it would change more than the member's
        session deadline)."""
        if (
            not self._retention_armed
            or self._loading
            or not member_id
            or self._in_flight.touches((group_id, MEMBERS))
        ):
            return None
        classic = self._table.get(group_id)
        if classic is not None and classic.members:
            return None
        return self._consumer.heartbeat_unchanged(
            group_id, member_id, member_epoch, client_id, client_host, self._topics, now_ms
        )

    def leave_group(self, req: LeaveGroupRequest, ctx: RequestContext, now_ms: int) -> Result:
        fx = Effects()
        self._begin_membership(req.group_id)
        if self._loading and req.group_id:
            fx.reply(ctx.reply_to, loading.leave_group(ctx.api_version))
        elif (consumer := self._consumer.table.get(req.group_id)) is not None:
            self._consumer_side.leave(consumer, req, ctx, Turn(now_ms, fx))
        else:
            self._membership.leave_group(req, ctx, Turn(now_ms, fx))
        return self._result(fx, now_ms)

    # -- the consumer group protocol (KIP-848) -----------------------------

    def consumer_group_heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, ctx: RequestContext, now_ms: int
    ) -> Result:
        fx = Effects()
        group_id = req.group_id
        self._begin((group_id, MEMBERS))
        classic = self._table.get(group_id)
        if self._loading:
            answer = loading.consumer_group_heartbeat()
        else:
            answer = self._consumer_side.heartbeat(classic, req, ctx, Turn(now_ms, fx))
        fx.reply(ctx.reply_to, consumer_heartbeat_response(answer))
        return self._result(fx, now_ms)

    def consumer_group_describe(
        self, req: ConsumerGroupDescribeRequest, ctx: RequestContext, now_ms: int
    ) -> Result:
        """The groups of the request owned by this shard; the shell merges results."""
        fx = Effects()
        self._begin(*((g, MEMBERS) for g in req.group_ids))
        fx.reply(
            ctx.reply_to,
            consumer_group_describe_response(
                req.group_ids, self._consumer, self._topic_name, self._loading
            ),
        )
        return self._result(fx, now_ms)

    # -- offsets -----------------------------------------------------------

    def offset_commit(
        self, req: OffsetCommitRequest, ctx: RequestContext, now_ms: int, retention_ms: int = -1
    ) -> Result:
        fx = Effects()
        self._begin((req.group_id, MEMBERS))
        if self._loading:
            fx.reply(ctx.reply_to, loading.offset_commit(req))
        elif (consumer := self._consumer.table.get(req.group_id)) is not None:
            # Fenced by member epoch (v9+); the offsets go where any are kept.
            error = offset_commit_error(
                consumer,
                req.member_id,
                req.generation_id_or_member_epoch,
                False,
                ctx.api_version,
            )
            if error is ErrorCode.none:
                self._offsets.offset_commit(req, ctx, now_ms, fx, retention_ms, fenced=False)
            else:
                fx.reply(ctx.reply_to, commit_response(req.topics, error, {}))
        else:
            self._offsets.offset_commit(req, ctx, now_ms, fx, retention_ms)
        return self._result(fx, now_ms)

    def txn_offset_commit(
        self, req: TxnOffsetCommitRequest, ctx: RequestContext, now_ms: int
    ) -> Result:
        """Offsets committed inside the producer's transaction (TxnOffsetCommit):
        pending until its marker (``complete_transaction``)."""
        fx = Effects()
        self._begin((req.group_id, MEMBERS))
        if self._loading:
            fx.reply(ctx.reply_to, loading.txn_offset_commit(req))
        elif (consumer := self._consumer.table.get(req.group_id)) is not None:
            self._consumer_side.txn_offset_commit(consumer, req, ctx, fx, now_ms)
        else:
            self._offsets.txn_offset_commit(req, ctx, now_ms, fx)
        result = self._result(fx, now_ms)
        if result.records:
            result.producer = ProducerBatch(req.producer_id, req.producer_epoch)
        return result

    def complete_transaction(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        reply_to: object,
        now_ms: int,
    ) -> Result:
        """The transaction's marker, to append; once it is durable the
        producer's pending offsets are committed or dropped, and ``reply_to``
        is answered NONE (or the append's error)."""
        fx = Effects()
        fx.records.append(control_record(commit, coordinator_epoch))
        fx.reply(reply_to, ErrorCode.none)
        result = self._result(fx, now_ms)
        assert result.append_token is not None
        result.producer = ProducerBatch(producer_id, producer_epoch, control=True)
        self._txn_batches.marker_appended(result.append_token.batch_id, producer_id, commit)
        return result

    def pending_transactions(self) -> list[int]:
        """The producer ids with offsets pending in an open transaction."""
        return self._txn.producers()

    def offset_fetch(
        self,
        group: OffsetFetchRequestGroup,
        ctx: RequestContext,
        now_ms: int,
        *,
        require_stable: bool = False,
    ) -> Result:
        """One group of an OffsetFetch request (v8+ shape).

        The reply is a whole OffsetFetchResponse holding just this group; the
        shell merges the groups of one request. ``require_stable``: a partition
        with a transactional offset pending answers UNSTABLE_OFFSET_COMMIT.
        """
        fx = Effects()
        self._begin_without_records((group.group_id, OFFSETS))
        if self._loading:
            fx.reply(ctx.reply_to, loading.offset_fetch(group.group_id))
        elif (consumer := self._consumer.table.get(group.group_id)) is not None:
            self._consumer_side.offset_fetch(consumer, group, ctx, fx, require_stable)
        else:
            fx.reply(ctx.reply_to, self._offsets.offset_fetch(group, require_stable))
        return self._result(fx, now_ms)

    def offset_delete(self, req: OffsetDeleteRequest, ctx: RequestContext, now_ms: int) -> Result:
        fx = Effects()
        self._begin((req.group_id, MEMBERS), (req.group_id, OFFSETS))
        if self._loading and req.group_id:
            fx.reply(ctx.reply_to, loading.offset_delete())
        else:
            self._removal.offset_delete(req, ctx, fx)
        return self._result(fx, now_ms)

    def delete_groups(self, req: DeleteGroupsRequest, ctx: RequestContext, now_ms: int) -> Result:
        """The groups of the request owned by this shard; the shell merges results."""
        fx = Effects()
        self._begin(*((g, part) for g in req.groups_names for part in (MEMBERS, OFFSETS)))
        if self._loading:
            fx.reply(ctx.reply_to, loading.delete_groups(req.groups_names))
        else:
            decided = self._consumer_side.delete_groups(req.groups_names, fx)
            self._removal.delete_groups(req, ctx, fx, decided)
        return self._result(fx, now_ms)

    def on_topics_deleted(self, topics: Collection[str], now_ms: int) -> Result:
        """Tombstones for every offset of these deleted topics, in every group."""
        fx = Effects()
        self._begin()
        self._removal.delete_topic_offsets(frozenset(topics), fx)
        return self._result(fx, now_ms)

    # -- descriptions ------------------------------------------------------

    def describe_groups(
        self, req: DescribeGroupsRequest, ctx: RequestContext, now_ms: int
    ) -> Result:
        """The groups of the request owned by this shard; the shell merges results."""
        fx = Effects()
        self._begin(*((g, MEMBERS) for g in req.groups))
        consumer_groups = self._consumer.table.groups
        fx.reply(
            ctx.reply_to,
            loading.describe_groups(req.groups)
            if self._loading
            else describe_groups_response(req, self._table.get, consumer_groups, ctx.api_version),
        )
        return self._result(fx, now_ms)

    def list_groups(self, req: ListGroupsRequest, ctx: RequestContext, now_ms: int) -> Result:
        """This shard's groups; the shell concatenates the shards' lists."""
        fx = Effects()
        self._begin()
        error = ErrorCode.coordinator_load_in_progress if self._loading else ErrorCode.none
        fx.reply(
            ctx.reply_to,
            list_groups_response(req, self._table, self._consumer.table.groups, error),
        )
        return self._result(fx, now_ms)

    def groups(self) -> Iterator[GroupView]:
        """A snapshot of every group, for metrics and tools."""
        for group in list(self._table):
            yield group_view(group)

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
        classic = self._timers.next_deadline()
        consumer = self._consumer.next_deadline()
        if consumer is None:
            return classic
        return consumer if classic is None else min(classic, consumer)

    def nothing_due_before(self, ms: int) -> bool:
        """A cheap check that no timer is due before ``ms``."""
        return self._timers.nothing_due_before(ms) and self._consumer.timers.nothing_due_before(ms)

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
