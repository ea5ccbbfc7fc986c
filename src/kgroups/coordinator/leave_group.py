"""LeaveGroup: members leave, or an admin tool removes static members."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.leave_group.v5.request import LeaveGroupRequest
from kio.schema.leave_group.v5.response import MemberResponse

from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.current_member import validate_current_member
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.rebalance import Rebalance
from kgroups.coordinator.responses import UNKNOWN_MEMBER_ID, leave_response
from kgroups.coordinator.state import Request, answer_without_group
from kgroups.coordinator.turn import Turn


class LeaveGroupHandler:
    def __init__(self, table: GroupTable, rebalance: Rebalance) -> None:
        self._table = table
        self._rebalance = rebalance

    def leave_group(self, req: LeaveGroupRequest, ctx: RequestContext, turn: Turn) -> None:
        version = ctx.api_version
        if not req.group_id:
            turn.fx.reply(ctx.reply_to, leave_response(version, ErrorCode.invalid_group_id))
            return
        group = self._table.get(req.group_id)
        if group is None:
            error = answer_without_group(Request.LEAVE_GROUP)
            members = tuple(
                _member_response(m.member_id, m.group_instance_id, error) for m in req.members
            )
            turn.fx.reply(ctx.reply_to, leave_response(version, ErrorCode.none, members))
            return
        results = []
        for identity in req.members:
            error = self._leave_one(group, identity.member_id, identity.group_instance_id, turn)
            results.append(_member_response(identity.member_id, identity.group_instance_id, error))
        turn.fx.reply(ctx.reply_to, leave_response(version, ErrorCode.none, tuple(results)))

    def _leave_one(
        self,
        group: ClassicGroup,
        member_id: str,
        group_instance_id: str | None,
        turn: Turn,
    ) -> ErrorCode:
        if member_id == UNKNOWN_MEMBER_ID:
            # Admin tools remove static members by instance id alone.
            current = (
                None if group_instance_id is None else group.static_member_id(group_instance_id)
            )
            if current is None:
                return ErrorCode.unknown_member_id
            self._rebalance.remove_member_and_update_group(group, group.get(current), turn)
            return ErrorCode.none
        if group.is_pending(member_id):
            self._rebalance.remove_pending_member_and_update_group(group, member_id, turn)
            return ErrorCode.none
        error = validate_current_member(group, member_id, group_instance_id)
        if error is not None:
            return error
        self._rebalance.remove_member_and_update_group(group, group.get(member_id), turn)
        return ErrorCode.none


def _member_response(
    member_id: str, group_instance_id: str | None, error: ErrorCode
) -> MemberResponse:
    return MemberResponse(
        member_id=member_id, group_instance_id=group_instance_id, error_code=error
    )
