"""Is a request's member the one the group knows under that id?"""

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
