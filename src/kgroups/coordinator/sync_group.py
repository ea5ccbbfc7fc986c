"""SyncGroup: members ask for their assignment; the leader's brings it."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.sync_group.v5.request import SyncGroupRequest

from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.current_member import validate_generation_member
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.group_records import group_metadata_record, group_metadata_value
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.member import Member
from kgroups.coordinator.rebalance import Rebalance
from kgroups.coordinator.responses import sync_response
from kgroups.coordinator.state import (
    PARK_SYNC,
    SEND_ASSIGNMENT,
    Request,
    answer_without_group,
    answers_by_state,
)
from kgroups.coordinator.turn import Turn

# SyncGroup v5 made protocol type and name mandatory.
_MANDATORY_SYNC_PROTOCOL_VERSION = 5


class SyncGroupHandler:
    def __init__(self, table: GroupTable, rebalance: Rebalance) -> None:
        self._table = table
        self._rebalance = rebalance
        self._answers = answers_by_state(
            Request.SYNC_GROUP,
            {PARK_SYNC: self._park_sync, SEND_ASSIGNMENT: self._send_assignment},
        )

    def sync_group(self, req: SyncGroupRequest, ctx: RequestContext, turn: Turn) -> None:
        if ctx.api_version >= _MANDATORY_SYNC_PROTOCOL_VERSION and (
            req.protocol_type is None or req.protocol_name is None
        ):
            turn.fx.reply(ctx.reply_to, sync_response(ErrorCode.inconsistent_group_protocol))
            return
        if not req.group_id:
            turn.fx.reply(ctx.reply_to, sync_response(ErrorCode.invalid_group_id))
            return
        group = self._table.get(req.group_id)
        if group is None:
            turn.fx.reply(ctx.reply_to, sync_response(answer_without_group(Request.SYNC_GROUP)))
            return
        error = self._validate_sync(group, req)
        if error is not None:
            turn.fx.reply(ctx.reply_to, sync_response(error))
            return

        answer = self._answers[group.state]
        if isinstance(answer, ErrorCode):
            turn.fx.reply(ctx.reply_to, sync_response(answer))
        else:
            answer(group, group.get(req.member_id), req, ctx, turn)

    def _park_sync(
        self,
        group: ClassicGroup,
        member: Member,
        req: SyncGroupRequest,
        ctx: RequestContext,
        turn: Turn,
    ) -> None:
        if group.is_leader(member.member_id):
            # The leader's assignment is stored: copy the group for a rollback.
            self._table.guard(group.group_id)
        displaced = group.take_sync(member)
        if displaced is not None:
            turn.fx.reply(displaced, sync_response(ErrorCode.rebalance_in_progress))
        member.awaiting_sync = ctx.reply_to
        self._rebalance.remove_pending_sync_member(group, member.member_id)
        if group.is_leader(member.member_id):
            self._store_assignment(group, req, turn)

    # The parameters of every answer in ``_answers``, as _park_sync's.
    def _send_assignment(
        self,
        group: ClassicGroup,
        member: Member,
        req: SyncGroupRequest,
        ctx: RequestContext,
        turn: Turn,
    ) -> None:
        self._rebalance.remove_pending_sync_member(group, member.member_id)
        turn.fx.reply(
            ctx.reply_to,
            sync_response(
                ErrorCode.none,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                assignment=member.assignment,
            ),
        )
        self._rebalance.reschedule_session(group, member, turn.now, member.session_timeout_ms)

    def _validate_sync(self, group: ClassicGroup, req: SyncGroupRequest) -> ErrorCode | None:
        error = validate_generation_member(
            group, req.member_id, req.group_instance_id, req.generation_id
        )
        if error is not None:
            return error
        if req.protocol_type is not None and req.protocol_type != group.protocol_type:
            return ErrorCode.inconsistent_group_protocol
        if req.protocol_name is not None and req.protocol_name != group.protocol_name:
            return ErrorCode.inconsistent_group_protocol
        return None

    def _store_assignment(self, group: ClassicGroup, req: SyncGroupRequest, turn: Turn) -> None:
        """The leader's assignment: store the group, then answer everyone waiting."""
        given = {a.member_id: a.assignment for a in req.assignments}
        # Members the leader left out get an empty assignment.
        assignment = {member_id: given.get(member_id, b"") for member_id in group.members}
        turn.fx.emit(
            group_metadata_record(group_metadata_value(group, assignment), group.group_id),
            self._table,
        )
        self._rebalance.propagate_assignment(group, ErrorCode.none, turn)
