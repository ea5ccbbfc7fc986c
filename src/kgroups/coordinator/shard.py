"""The group coordinator for one ``__consumer_offsets`` partition: the
requests of its groups.

The shard routes each request to the kind of group its group id names:
classic (membership.py; offsets in offset_handlers.py and offset_removal.py)
or KIP-848 consumer groups (consumer_side.py). Between loading's first
``replay`` and ``finish_load`` requests are answered as Kafka answers a
loading coordinator (loading_answers.py). Each call opens its journal before
it changes anything and closes it into its Result (call_journal.py).

What the shard is made of, and the life of its partition (loading, timers,
appends durable or failed), are in shard_partition.py.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Collection

from kio.schema.alter_share_group_offsets.v0.response import AlterShareGroupOffsetsResponse
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.delete_share_group_offsets.v0.response import DeleteShareGroupOffsetsResponse
from kio.schema.describe_groups.v6.request import DescribeGroupsRequest
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9.request import JoinGroupRequest
from kio.schema.leave_group.v5.request import LeaveGroupRequest
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.offset_delete.v0.request import OffsetDeleteRequest
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from kio.schema.sync_group.v5.request import SyncGroupRequest
from kio.schema.txn_offset_commit.v5.request import TxnOffsetCommitRequest

import kgroups.coordinator.loading_answers as loading
from kgroups.coordinator.commit_request import CommitRequest
from kgroups.coordinator.consumer.offsets import offset_commit_error
from kgroups.coordinator.consumer_messages import (
    consumer_group_describe_response,
    consumer_heartbeat_response,
    heartbeat_error,
)
from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.control_records import control_record
from kgroups.coordinator.effects import Effects
from kgroups.coordinator.offset_handlers import fetch_response, txn_commit_response
from kgroups.coordinator.offset_removal import offset_delete_error
from kgroups.coordinator.responses import (
    NO_THROTTLE,
    UNKNOWN_MEMBER_ID,
    commit_response,
    join_error,
)
from kgroups.coordinator.result import EndMarker, ProducerBatch, Result
from kgroups.coordinator.rollback import MEMBERS, OFFSETS
from kgroups.coordinator.shard_partition import ShardPartition
from kgroups.coordinator.share.messages import (
    share_group_describe_response,
    share_heartbeat_error,
    share_heartbeat_request,
    share_heartbeat_response,
)
from kgroups.coordinator.share.records import ShareStatePlan, TopicPartitions
from kgroups.coordinator.turn import Turn
from kgroups.coordinator.views import (
    describe_groups_response,
    list_groups_response,
)


class GroupCoordinatorShard(ShardPartition):
    # -- membership --------------------------------------------------------

    def join_group(self, req: JoinGroupRequest, ctx: RequestContext, now_ms: int) -> Result:
        fx = Effects()
        self._begin_membership(req.group_id)
        if req.group_id in self._share.table.groups and not self._loading:
            # A group of another kind: as Kafka, refused before any member is made.
            error = ErrorCode.inconsistent_group_protocol
            fx.reply(ctx.reply_to, join_error(ctx.api_version, error, UNKNOWN_MEMBER_ID))
            return self._result(fx, now_ms)
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
        elif group_id in self._share.table.groups:
            answer = heartbeat_error(
                ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group."
            )
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
        response = consumer_group_describe_response(
            req.group_ids, self._consumer, self._parts.topic_name, self._loading
        )
        share = self._share.table.groups
        if not self._loading and any(g in share for g in req.group_ids):
            # A share group is not a consumer group: Kafka's message says so.
            groups = tuple(
                dataclasses.replace(g, error_message=f"Group {g.group_id} is not a consumer group.")
                if g.group_id in share
                else g
                for g in response.groups
            )
            response = dataclasses.replace(response, groups=groups)
        fx.reply(ctx.reply_to, response)
        return self._result(fx, now_ms)

    # -- share groups (KIP-932) --------------------------------------------

    def share_group_heartbeat(
        self, req: ShareGroupHeartbeatRequest, ctx: RequestContext, now_ms: int
    ) -> Result:
        fx = Effects()
        group_id = req.group_id
        self._begin((group_id, MEMBERS))
        if self._loading:
            answer = share_heartbeat_error(ErrorCode.coordinator_load_in_progress)
        elif self._other_kind(group_id):
            answer = share_heartbeat_error(
                ErrorCode.group_id_not_found, f"Group {group_id} is not a share group."
            )
        else:
            request = share_heartbeat_request(req, ctx.client_id, ctx.client_host)
            records, answer = self._share.heartbeat(request, self._topics, now_ms)
            fx.records.extend(records)  # already applied
        fx.reply(ctx.reply_to, share_heartbeat_response(answer))
        return self._result(fx, now_ms)

    def share_group_describe(
        self, req: ShareGroupDescribeRequest, ctx: RequestContext, now_ms: int
    ) -> Result:
        """The groups of the request owned by this shard; the shell merges results."""
        fx = Effects()
        self._begin(*((g, MEMBERS) for g in req.group_ids))
        fx.reply(
            ctx.reply_to,
            share_group_describe_response(
                req.group_ids,
                self._share.table,
                self._other_kind,
                self._parts.topic_name,
                self._loading,
            ),
        )
        return self._result(fx, now_ms)

    def share_group_offsets_change(
        self, group_id: str, create: bool, ctx: RequestContext, now_ms: int
    ) -> Result:
        """Whether an admin may set (AlterShareGroupOffsets; ``create``: the
        group is made if missing) or delete (DeleteShareGroupOffsets) the
        group's start offsets: only those of an empty share group. The reply
        carries the group's error alone; the handler adds the partitions."""
        fx = Effects()
        self._begin((group_id, MEMBERS))
        group = self._share.table.get(group_id)
        error, message = ErrorCode.none, None
        if self._loading:
            error = ErrorCode.coordinator_load_in_progress
        elif self._other_kind(group_id):
            error, message = ErrorCode.group_id_not_found, f"Group {group_id} is not a share group."
        elif group is None and not create:
            error, message = ErrorCode.group_id_not_found, f"Group {group_id} not found."
        elif group is not None and group.members:
            error, message = ErrorCode.non_empty_group, "The group is not empty."
        else:
            fx.records.extend(self._share.offsets_changed(group_id, self._topics))
        reply: AlterShareGroupOffsetsResponse | DeleteShareGroupOffsetsResponse = (
            AlterShareGroupOffsetsResponse if create else DeleteShareGroupOffsetsResponse
        )(throttle_time=NO_THROTTLE, error_code=error, error_message=message, responses=())
        fx.reply(ctx.reply_to, reply)
        return self._result(fx, now_ms)

    def share_state_to_initialize(self, group_id: str, ctx: RequestContext, now_ms: int) -> Result:
        """The share group's partitions whose share state is to be initialized
        (marked initializing), with the state epoch to initialize them at."""
        fx = Effects()
        self._begin((group_id, MEMBERS))
        if self._loading or group_id not in self._share.table.groups:
            fx.reply(ctx.reply_to, ShareStatePlan(error=int(ErrorCode.group_id_not_found)))
        else:
            records, epoch, todo = self._share.state_to_initialize(group_id, self._topics, now_ms)
            fx.records.extend(records)  # already applied
            fx.reply(ctx.reply_to, ShareStatePlan(group_epoch=epoch, partitions=tuple(todo)))
        return self._result(fx, now_ms)

    def share_state_initialized(
        self, group_id: str, done: tuple[TopicPartitions, ...], ctx: RequestContext, now_ms: int
    ) -> Result:
        fx = Effects()
        self._begin((group_id, MEMBERS))
        if not self._loading:
            fx.records.extend(self._share.state_initialized(group_id, list(done)))
        fx.reply(ctx.reply_to, ShareStatePlan())
        return self._result(fx, now_ms)

    def share_state_partitions(self, group_id: str, ctx: RequestContext, now_ms: int) -> Result:
        """The partitions whose share state the share group has (initialized
        or initializing), and whether it has no members."""
        fx = Effects()
        self._begin((group_id, MEMBERS))
        group = self._share.table.get(group_id)
        if self._loading:
            fx.reply(
                ctx.reply_to, ShareStatePlan(error=int(ErrorCode.coordinator_load_in_progress))
            )
        elif group is None:
            fx.reply(ctx.reply_to, ShareStatePlan(error=int(ErrorCode.group_id_not_found)))
        else:
            state = self._share.state_partitions(group_id)
            fx.reply(
                ctx.reply_to,
                ShareStatePlan(
                    group_epoch=group.group_epoch,
                    partitions=state.initialized + state.initializing,
                    empty=not group.members,
                ),
            )
        return self._result(fx, now_ms)

    def share_state_forgotten(
        self, group_id: str, topic_ids: frozenset[uuid.UUID], ctx: RequestContext, now_ms: int
    ) -> Result:
        fx = Effects()
        self._begin((group_id, MEMBERS))
        if not self._loading:
            fx.records.extend(self._share.state_forgotten(group_id, set(topic_ids)))
        fx.reply(ctx.reply_to, ShareStatePlan())
        return self._result(fx, now_ms)

    def _delete_share_groups(self, group_ids: Collection[str], fx: Effects) -> dict[str, ErrorCode]:
        """DeleteGroups of the share groups among ``group_ids``: an empty one
        goes, with its records; one with members is NON_EMPTY_GROUP."""
        decided: dict[str, ErrorCode] = {}
        for group_id in dict.fromkeys(group_ids):
            group = self._share.table.get(group_id)
            if group is None:
                continue
            if group.members:
                decided[group_id] = ErrorCode.non_empty_group
            else:
                fx.records.extend(self._share.delete_group(group_id))
                decided[group_id] = ErrorCode.none
        return decided

    def _other_kind(self, group_id: str) -> bool:
        """Whether a classic or consumer group has this id."""
        return group_id in self._consumer.table.groups or self._table.get(group_id) is not None

    # -- offsets -----------------------------------------------------------

    def offset_commit(
        self, req: CommitRequest, ctx: RequestContext, now_ms: int, retention_ms: int = -1
    ) -> Result:
        fx = Effects()
        self._begin((req.group_id, MEMBERS))
        if self._loading:
            fx.reply(ctx.reply_to, loading.offset_commit(req))
        elif req.group_id in self._share.table.groups:
            # A share group keeps no committed offsets, as in Kafka.
            fx.reply(ctx.reply_to, commit_response(req.topics, ErrorCode.group_id_not_found, {}))
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
        elif req.group_id in self._share.table.groups:
            fx.reply(ctx.reply_to, txn_commit_response(req, ErrorCode.group_id_not_found, {}))
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
        is answered NONE (or the append's error: the log refuses a marker of
        an older producer or coordinator epoch)."""
        fx = Effects()
        # The record the marker's batch holds; the log writes it (append_marker).
        fx.records.append(control_record(commit, coordinator_epoch))
        fx.reply(reply_to, ErrorCode.none)
        result = self._result(fx, now_ms)
        assert result.append_token is not None
        result.producer = ProducerBatch(
            producer_id, producer_epoch, EndMarker(commit, coordinator_epoch)
        )
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
        elif group.group_id in self._share.table.groups:
            fx.reply(ctx.reply_to, fetch_response(group.group_id, (), ErrorCode.group_id_not_found))
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
        elif req.group_id in self._share.table.groups:
            fx.reply(ctx.reply_to, offset_delete_error(ErrorCode.group_id_not_found))
        else:
            self._parts.removal.offset_delete(req, ctx, fx)
        return self._result(fx, now_ms)

    def delete_groups(self, req: DeleteGroupsRequest, ctx: RequestContext, now_ms: int) -> Result:
        """The groups of the request owned by this shard; the shell merges results."""
        fx = Effects()
        self._begin(*((g, part) for g in req.groups_names for part in (MEMBERS, OFFSETS)))
        if self._loading:
            fx.reply(ctx.reply_to, loading.delete_groups(req.groups_names))
        else:
            decided = self._consumer_side.delete_groups(req.groups_names, fx)
            decided.update(self._delete_share_groups(req.groups_names, fx))
            self._parts.removal.delete_groups(req, ctx, fx, decided)
        return self._result(fx, now_ms)

    def on_topics_deleted(self, topics: Collection[str], now_ms: int) -> Result:
        """Tombstones for every offset of these deleted topics, in every group."""
        fx = Effects()
        self._begin()
        self._parts.removal.delete_topic_offsets(frozenset(topics), fx)
        return self._result(fx, now_ms)

    # -- descriptions ------------------------------------------------------

    def describe_groups(
        self, req: DescribeGroupsRequest, ctx: RequestContext, now_ms: int
    ) -> Result:
        """The groups of the request owned by this shard; the shell merges results."""
        fx = Effects()
        self._begin(*((g, MEMBERS) for g in req.groups))
        consumer_groups = self._consumer.table.groups
        share_groups = self._share.table.groups
        fx.reply(
            ctx.reply_to,
            loading.describe_groups(req.groups)
            if self._loading
            else describe_groups_response(
                req,
                self._table.get,
                lambda g: g in consumer_groups or g in share_groups,
                ctx.api_version,
            ),
        )
        return self._result(fx, now_ms)

    def list_groups(self, req: ListGroupsRequest, ctx: RequestContext, now_ms: int) -> Result:
        """This shard's groups; the shell concatenates the shards' lists."""
        fx = Effects()
        self._begin()
        error = ErrorCode.coordinator_load_in_progress if self._loading else ErrorCode.none
        fx.reply(
            ctx.reply_to,
            list_groups_response(
                req, self._table, self._consumer.table.groups, self._share.table.groups, error
            ),
        )
        return self._result(fx, now_ms)
