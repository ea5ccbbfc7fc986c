"""Heartbeat: a member shows it is alive and learns of a rebalance."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest

from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.current_member import validate_generation_member
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.rebalance import Rebalance
from kgroups.coordinator.responses import heartbeat_response
from kgroups.coordinator.state import GroupState
from kgroups.coordinator.turn import Turn


class HeartbeatHandler:
    def __init__(self, table: GroupTable, rebalance: Rebalance) -> None:
        self._table = table
        self._rebalance = rebalance

    def heartbeat(self, req: HeartbeatRequest, ctx: RequestContext, turn: Turn) -> None:
        turn.fx.reply(ctx.reply_to, heartbeat_response(self._heartbeat_error(req, turn.now)))

    def _heartbeat_error(self, req: HeartbeatRequest, now: int) -> ErrorCode:
        if not req.group_id:
            return ErrorCode.invalid_group_id
        group = self._table.get(req.group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        error = validate_generation_member(
            group, req.member_id, req.group_instance_id, req.generation_id
        )
        if error is not None:
            return error
        if group.is_in(GroupState.EMPTY):
            return ErrorCode.unknown_member_id
        member = group.get(req.member_id)
        self._rebalance.reschedule_session(group, member, now, member.session_timeout_ms)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none
