"""Heartbeat: a member shows it is alive and learns of a rebalance."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest

from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.current_member import validate_generation_member
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.member import Member
from kgroups.coordinator.rebalance import Rebalance
from kgroups.coordinator.responses import heartbeat_response
from kgroups.coordinator.state import (
    KEEP_ALIVE,
    KEEP_ALIVE_IN_REBALANCE,
    Request,
    answer_without_group,
    answers_by_state,
)
from kgroups.coordinator.turn import Turn


class HeartbeatHandler:
    def __init__(self, table: GroupTable, rebalance: Rebalance) -> None:
        self._table = table
        self._rebalance = rebalance
        self._answers = answers_by_state(
            Request.HEARTBEAT,
            {KEEP_ALIVE: self._keep_alive, KEEP_ALIVE_IN_REBALANCE: self._keep_alive_in_rebalance},
        )

    def heartbeat(self, req: HeartbeatRequest, ctx: RequestContext, turn: Turn) -> None:
        error = self.heartbeat_error(
            req.group_id, req.member_id, req.group_instance_id, req.generation_id, turn.now
        )
        turn.fx.reply(ctx.reply_to, heartbeat_response(error))

    def heartbeat_error(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        now: int,
    ) -> ErrorCode:
        """The whole of a heartbeat: its answer, and the member's session extended."""
        if not group_id:
            return ErrorCode.invalid_group_id
        group = self._table.get(group_id)
        if group is None:
            return answer_without_group(Request.HEARTBEAT)
        error = validate_generation_member(group, member_id, group_instance_id, generation_id)
        if error is not None:
            return error
        answer = self._answers[group.state]
        if isinstance(answer, ErrorCode):
            return answer
        return answer(group, group.get(member_id), now)

    def _keep_alive(self, group: ClassicGroup, member: Member, now: int) -> ErrorCode:
        self._rebalance.reschedule_session(group, member, now, member.session_timeout_ms)
        return ErrorCode.none

    def _keep_alive_in_rebalance(self, group: ClassicGroup, member: Member, now: int) -> ErrorCode:
        self._rebalance.reschedule_session(group, member, now, member.session_timeout_ms)
        return ErrorCode.rebalance_in_progress
