"""The consumer-group side of a shard: KIP-848 consumer groups as the
shard's requests reach them (ConsumerGroupHeartbeat; the JoinGroup and
LeaveGroup of classic-protocol members inside them, converted by
consumer/classic_members.py; the member epoch that fences offset requests;
DeleteGroups; timeouts), and a group changing kind (KIP-848 migration): a
classic group with members becomes a consumer group when a consumer-protocol
member joins it, and a consumer group left with classic-protocol members only
becomes classic again, swapped between the shard's two tables and journaled
like any change."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable

from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest as ClassicHeartbeatRequest
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.schema.join_group.v9.request import JoinGroupRequest
from kio.schema.leave_group.v5.request import LeaveGroupRequest
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup
from kio.schema.txn_offset_commit.v5.request import TxnOffsetCommitRequest

from kgroups.coordinator.consumer import (
    ConsumerGroup,
    HeartbeatAnswer,
    HeartbeatError,
    HeartbeatRequest,
)
from kgroups.coordinator.consumer.offsets import offset_commit_error, offset_fetch_error
from kgroups.coordinator.consumer_messages import heartbeat_error, heartbeat_request
from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.effects import Effects
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.group_records import group_metadata_record, group_tombstone
from kgroups.coordinator.offset_handlers import (
    fetch_response,
    txn_commit_response,
)
from kgroups.coordinator.parked_requests import answer_parked
from kgroups.coordinator.responses import heartbeat_response, join_error
from kgroups.coordinator.shard_parts import ShardParts
from kgroups.coordinator.turn import Turn

_MILLISECOND = datetime.timedelta(milliseconds=1)


class ConsumerSide:
    def __init__(self, parts: ShardParts, guard: Callable[[str], None]) -> None:
        self._table = parts.table
        self._membership = parts.membership
        self._offsets = parts.offsets
        self._consumer = parts.consumer
        self._classic_members = parts.classic_members
        self._topics = parts.topics
        self._config = parts.config
        # Journals a classic group whose changes build on a batch in flight.
        self._guard = guard

    def join(
        self,
        group: ConsumerGroup,
        req: JoinGroupRequest,
        ctx: RequestContext,
        fx: Effects,
        now_ms: int,
    ) -> None:
        """A classic-protocol member's JoinGroup inside a consumer group."""
        session_ms = req.session_timeout // _MILLISECOND
        if not (
            self._config.min_session_timeout_ms <= session_ms <= self._config.max_session_timeout_ms
        ):
            error = ErrorCode.invalid_session_timeout
            fx.reply(ctx.reply_to, join_error(ctx.api_version, error, req.member_id))
            return
        records, response = self._classic_members.join(group, req, ctx, self._topics, now_ms)
        fx.records.extend(records)  # already applied
        fx.reply(ctx.reply_to, response)

    def classic_heartbeat(
        self, group: ConsumerGroup, req: ClassicHeartbeatRequest, now_ms: int
    ) -> HeartbeatResponse:
        """A classic-protocol member's Heartbeat inside a consumer group."""
        error = self._classic_members.heartbeat(
            group, req.member_id, req.group_instance_id, req.generation_id, now_ms
        )
        assert error is not None  # it may arm its timer
        return heartbeat_response(error)

    def leave(
        self, group: ConsumerGroup, req: LeaveGroupRequest, ctx: RequestContext, turn: Turn
    ) -> None:
        """Classic-protocol members' LeaveGroup inside a consumer group."""
        records, response = self._classic_members.leave(group, req, ctx.api_version, self._topics)
        turn.fx.records.extend(records)  # already applied
        self.downgrade(turn)
        turn.fx.reply(ctx.reply_to, response)

    def heartbeat(
        self,
        classic: ClassicGroup | None,
        req: ConsumerGroupHeartbeatRequest,
        ctx: RequestContext,
        turn: Turn,
    ) -> HeartbeatAnswer:
        """ConsumerGroupHeartbeat; ``classic``: the classic group of its group id."""
        if ctx.api_version >= 1 and not req.member_id:
            # From v1 on, the member names itself.
            return heartbeat_error(ErrorCode.invalid_request, "MemberId can't be empty.")
        request = heartbeat_request(req, ctx)
        if classic is not None and classic.members:
            return self._upgrade_and_heartbeat(classic, request, turn.fx, turn.now)
        records, answer = self._consumer.heartbeat(request, self._topics, turn.now)
        turn.fx.records.extend(records)  # already applied
        self.downgrade(turn)
        return answer

    def txn_offset_commit(
        self,
        group: ConsumerGroup,
        req: TxnOffsetCommitRequest,
        ctx: RequestContext,
        fx: Effects,
        now_ms: int,
    ) -> None:
        """TxnOffsetCommit to a consumer group: fenced by member epoch; the
        offsets go where any are kept."""
        error = offset_commit_error(group, req.member_id, req.generation_id, True, ctx.api_version)
        if error is ErrorCode.none:
            self._offsets.txn_offset_commit(req, ctx, now_ms, fx, fenced=False)
            return
        # Kafka answers a stale member epoch here as a stale generation.
        if error is ErrorCode.stale_member_epoch:
            error = ErrorCode.illegal_generation
        fx.reply(ctx.reply_to, txn_commit_response(req, error, {}))

    def offset_fetch(
        self,
        group: ConsumerGroup,
        fetched: OffsetFetchRequestGroup,
        ctx: RequestContext,
        fx: Effects,
        require_stable: bool,
    ) -> None:
        """OffsetFetch of a consumer group's offsets: refused to a member of a stale epoch."""
        error = offset_fetch_error(group, fetched.member_id, fetched.member_epoch)
        if error is ErrorCode.none:
            fx.reply(ctx.reply_to, self._offsets.offset_fetch(fetched, require_stable))
        else:
            fx.reply(ctx.reply_to, fetch_response(fetched.group_id, (), error))

    def delete_groups(self, group_ids: Iterable[str], fx: Effects) -> dict[str, ErrorCode]:
        """DeleteGroups of the consumer groups among ``group_ids``: the
        outcome of each (the classic side answers the others)."""
        decided: dict[str, ErrorCode] = {}
        for group_id in dict.fromkeys(group_ids):
            group = self._consumer.table.get(group_id)
            if group is None:
                continue
            if group.members:
                decided[group_id] = ErrorCode.non_empty_group
            else:
                fx.records.extend(self._consumer.delete_group(group_id))
                decided[group_id] = ErrorCode.none
        return decided

    def fence_now(self, group_id: str, member_id: str, turn: Turn) -> None:
        """As an expired session: fenced, and the group may become classic."""
        turn.fx.records.extend(self._consumer.fence_now(group_id, member_id, self._topics))
        self.downgrade(turn)

    def expire(self, turn: Turn) -> None:
        """Members whose session or rebalance timeout is due are fenced."""
        turn.fx.records.extend(self._consumer.expire(turn.now, self._topics))  # already applied
        self.downgrade(turn)

    def _upgrade_and_heartbeat(
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
        assert journal is not None  # the call is journaled (CallJournal.begin)
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
        if not self._consumer.removed_from:
            return  # the common case: nobody left
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
