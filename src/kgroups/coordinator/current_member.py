"""Is a request's member the one the group knows under that id, and in its generation?"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.coordinator.group import ClassicGroup


def validate_current_member(
    group: ClassicGroup, member_id: str, group_instance_id: str | None
) -> ErrorCode | None:
    """Is this the member it claims to be? FENCED_INSTANCE_ID for a stale static id."""
    if group_instance_id is not None:
        current = group.static_member_id(group_instance_id)
        if current is None:
            return ErrorCode.unknown_member_id
        if current != member_id:
            return ErrorCode.fenced_instance_id
        return None
    if not group.has(member_id):
        return ErrorCode.unknown_member_id
    return None


def validate_generation_member(
    group: ClassicGroup, member_id: str, group_instance_id: str | None, generation_id: int
) -> ErrorCode | None:
    """The checks of a request made within a generation (SyncGroup, Heartbeat, OffsetCommit)."""
    error = validate_current_member(group, member_id, group_instance_id)
    if error is not None:
        return error
    if generation_id != group.generation_id:
        return ErrorCode.illegal_generation
    return None
