"""Requests parked on a member, answered with an error before their phase ends.

A member's JoinGroup waits for the join phase, its SyncGroup for the leader's
assignment. When the member is fenced, removed or the group moves away, both
are told at once rather than left hanging.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.coordinator.effects import Effects
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.member import Member
from kgroups.coordinator.responses import join_error, sync_response
from kgroups.coordinator.result import Response


def error_answers(
    member: Member, error: ErrorCode, member_id: str | None = None
) -> list[tuple[object, Response]]:
    """What the member's parked requests are told on ``error``; the JoinGroup
    answer names ``member_id``, the member's own unless given."""
    answers: list[tuple[object, Response]] = []
    if member.awaiting_join is not None:
        named = member.member_id if member_id is None else member_id
        answers.append((member.awaiting_join, join_error(member.join_api_version, error, named)))
    if member.awaiting_sync is not None:
        answers.append((member.awaiting_sync, sync_response(error)))
    return answers


def answer_parked(
    group: ClassicGroup,
    member: Member,
    error: ErrorCode,
    fx: Effects,
    member_id: str | None = None,
) -> None:
    """Unpark the member's JoinGroup and SyncGroup, answering both with ``error``."""
    for reply_to, response in error_answers(member, error, member_id):
        fx.reply(reply_to, response)
    group.take_join(member)
    group.take_sync(member)


def parked_reply_tos(group: ClassicGroup) -> list[object]:
    """Every request parked in the group."""
    return [
        reply_to
        for member in group.members.values()
        for reply_to in (member.awaiting_join, member.awaiting_sync)
        if reply_to is not None
    ]
