"""Every way a classic group's offsets go: OffsetDelete, DeleteGroups,
retention (offsets.retention.minutes) and deleted topics.

Each removed offset, committed or pending in a transaction, is a tombstone
applied through the replay path; an Empty group left without offsets goes
with them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.delete_groups.v2.response import DeletableGroupResult, DeleteGroupsResponse
from kio.schema.errors import ErrorCode
from kio.schema.offset_delete.v0.request import OffsetDeleteRequest
from kio.schema.offset_delete.v0.response import (
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)

from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.effects import Effects
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.group_records import group_tombstone, offset_tombstone
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.offset_expiry import expired_offsets
from kgroups.coordinator.offsets import TopicPartition
from kgroups.coordinator.responses import NO_THROTTLE
from kgroups.coordinator.state import (
    DELETE_GROUP,
    DELETE_OFFSETS,
    DELETE_UNSUBSCRIBED_OFFSETS,
    GroupState,
    Request,
    answer_without_group,
    answers_by_state,
)
from kgroups.coordinator.txn_offsets import TransactionalOffsets
from kgroups.protocol.types import GroupId, TopicName, i32

_NOTHING_DECIDED: Mapping[str, ErrorCode] = {}
_NO_TOPICS: Mapping[str, frozenset[str]] = {}


class OffsetRemoval:
    def __init__(
        self, table: GroupTable, config: CoordinatorConfig, txn: TransactionalOffsets
    ) -> None:
        self._table = table
        self._txn = txn
        # The groups with pending transactional offsets.
        self._pending_groups = txn.by_group
        self._config = config
        self._offset_deletes = answers_by_state(
            Request.OFFSET_DELETE,
            {
                DELETE_OFFSETS: _no_offsets_kept,
                DELETE_UNSUBSCRIBED_OFFSETS: _subscribed_offsets_kept,
            },
        )
        self._group_deletes = answers_by_state(
            Request.DELETE_GROUPS, {DELETE_GROUP: self._delete_group}
        )

    # -- OffsetDelete ------------------------------------------------------

    def offset_delete(self, req: OffsetDeleteRequest, ctx: RequestContext, fx: Effects) -> None:
        if not req.group_id:
            fx.reply(ctx.reply_to, offset_delete_error(ErrorCode.invalid_group_id))
            return
        group = self._table.get(req.group_id)
        if group is None:
            error = answer_without_group(Request.OFFSET_DELETE)
            fx.reply(ctx.reply_to, offset_delete_error(error))
            return
        requested = [
            TopicPartition(topic.name, p.partition_index)
            for topic in req.topics
            for p in topic.partitions
        ]
        answer = self._offset_deletes[group.state]
        subscribed = answer if isinstance(answer, ErrorCode) else answer(group, requested)
        if isinstance(subscribed, ErrorCode):
            fx.reply(ctx.reply_to, offset_delete_error(subscribed))
            return

        eligible = [tp for tp in requested if tp not in subscribed]
        self._remove_offsets(group, eligible, fx)
        by_topic: dict[str, list[OffsetDeleteResponsePartition]] = {}
        for tp in requested:
            error = ErrorCode.group_subscribed_to_topic if tp in subscribed else ErrorCode.none
            by_topic.setdefault(tp.topic, []).append(
                OffsetDeleteResponsePartition(partition_index=i32(tp.partition), error_code=error)
            )
        fx.reply(
            ctx.reply_to,
            OffsetDeleteResponse(
                error_code=ErrorCode.none,
                throttle_time=NO_THROTTLE,
                topics=tuple(
                    OffsetDeleteResponseTopic(name=TopicName(topic), partitions=tuple(partitions))
                    for topic, partitions in by_topic.items()
                ),
            ),
        )

    # -- DeleteGroups ------------------------------------------------------

    def delete_groups(
        self,
        req: DeleteGroupsRequest,
        ctx: RequestContext,
        fx: Effects,
        consumer_groups: Mapping[str, ErrorCode] = _NOTHING_DECIDED,
    ) -> None:
        """``consumer_groups``: the answers for the consumer groups (KIP-848)
        among them; the offsets of those deleted go too."""
        outcome: list[tuple[str, ErrorCode | None]] = []
        for group_id in dict.fromkeys(req.groups_names):
            group = self._table.get(group_id)
            decided = consumer_groups.get(group_id)
            if decided is not None:
                if decided is ErrorCode.none and group is not None:
                    self._delete_group(group, fx)
                outcome.append((group_id, decided))
                continue
            if group is None:
                outcome.append((group_id, answer_without_group(Request.DELETE_GROUPS)))
                continue
            answer = self._group_deletes[group.state]
            if isinstance(answer, ErrorCode):
                outcome.append((group_id, answer))
            else:
                answer(group, fx)
                outcome.append((group_id, None))
        fx.reply(ctx.reply_to, _delete_groups_response(outcome, ErrorCode.none))

    def _delete_group(self, group: ClassicGroup, fx: Effects) -> None:
        # Its last offsets gone, an Empty group goes too; pending
        # transactional offsets go with them.
        pending = self._txn.partitions(group.group_id) - group.offsets.keys()
        self._remove_offsets(group, [*group.offsets, *pending], fx)

    # -- retention ---------------------------------------------------------

    def expire_offsets(
        self, now: int, fx: Effects, consumer_groups: Mapping[str, frozenset[str]] = _NO_TOPICS
    ) -> None:
        """Drop expired offsets, and Empty groups left without any.

        Like Kafka, a lost batch of these tombstones is not retried: the
        offsets come back on the next load and expire again.
        ``consumer_groups``: the topics each consumer group with members
        subscribes to, whose offsets are kept.
        """
        retention = self._config.offsets_retention_ms
        for group in list(self._table):
            topics = consumer_groups.get(group.group_id)
            expired = expired_offsets(group, now, retention, topics)
            if group.group_id in self._pending_groups:
                # Not while a transaction may still commit the partition.
                expired = [tp for tp in expired if not self._txn.has(group.group_id, tp)]
            self._remove_offsets(group, expired, fx)

    def delete_topic_offsets(self, topics: frozenset[str], fx: Effects) -> None:
        """Deleted topics' offsets go from every group (Kafka's onPartitionsDeleted),
        so a topic created again under the same name does not inherit them."""
        for group in list(self._table):
            gone = [tp for tp in group.offsets if tp.topic in topics]
            if group.group_id in self._pending_groups:
                pending = self._txn.partitions(group.group_id) - group.offsets.keys()
                gone += [tp for tp in pending if tp.topic in topics]
            if gone:
                self._remove_offsets(group, gone, fx)

    # -- shared by the deletions -------------------------------------------

    def _remove_offsets(
        self, group: ClassicGroup, partitions: list[TopicPartition], fx: Effects
    ) -> None:
        """Tombstone the offsets, committed or pending in a transaction; a
        group left Empty with none goes too."""
        group_id = group.group_id
        pending = group_id in self._pending_groups
        removed = [
            tp
            for tp in partitions
            if tp in group.offsets or (pending and self._txn.has(group_id, tp))
        ]
        committed = sum(1 for tp in removed if tp in group.offsets)
        goes_too = group.is_in(GroupState.EMPTY) and committed == len(group.offsets)
        if removed or goes_too:
            self._table.guard(group_id)
        for tp in removed:
            fx.emit(offset_tombstone(group_id, tp), self._table)
            if pending:
                self._txn.remove(group_id, tp)
        if goes_too and self._txn.has_group(group_id):
            return  # kept while a transaction may still commit offsets to it
        if goes_too:
            if group.generation_id > 0:
                fx.emit(group_tombstone(group.group_id), self._table)
            else:
                # Never stored as metadata: forgetting it needs no record.
                self._table.drop(group)


def _no_offsets_kept(group: ClassicGroup, requested: list[TopicPartition]) -> set[TopicPartition]:
    return set()


def _subscribed_offsets_kept(
    group: ClassicGroup, requested: list[TopicPartition]
) -> set[TopicPartition] | ErrorCode:
    """The offsets a consumer group still consumes, which stay."""
    if not group.is_consumer_group():
        # Only a consumer group's subscriptions can be read.
        return ErrorCode.non_empty_group
    return {tp for tp in requested if group.is_subscribed_to_topic(tp.topic)}


def offset_delete_error(error: ErrorCode) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(error_code=error, throttle_time=NO_THROTTLE, topics=())


def _delete_groups_response(
    outcome: Iterable[tuple[str, ErrorCode | None]], default: ErrorCode
) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(
        throttle_time=NO_THROTTLE,
        results=tuple(
            DeletableGroupResult(
                group_id=GroupId(group_id), error_code=default if error is None else error
            )
            for group_id, error in outcome
        ),
    )
