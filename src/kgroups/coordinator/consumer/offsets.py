"""Who may commit and fetch a consumer group's offsets (OffsetCommit v9+ and
OffsetFetch v9+ carry the member epoch instead of a generation)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer.group import ConsumerGroup


def offset_commit_error(
    group: ConsumerGroup,
    member_id: str,
    member_epoch: int,
    transactional: bool,
    api_version: int,
) -> ErrorCode:
    """ErrorCode.none when the commit may go ahead."""
    if member_epoch < 0 and not group.members:
        return ErrorCode.none  # the admin client, or a consumer without a group
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.unknown_member_id
    if member.classic is not None:
        # A classic-protocol member commits with its generation, any version.
        if member_epoch != member.member_epoch:
            return ErrorCode.illegal_generation
        return ErrorCode.none
    if not transactional and api_version < 9:
        return ErrorCode.unsupported_version
    if member_epoch != member.member_epoch:
        return ErrorCode.stale_member_epoch
    return ErrorCode.none


def offset_fetch_error(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode:
    """ErrorCode.none when the fetch may go ahead."""
    if member_id is None and member_epoch < 0:
        return ErrorCode.none  # the admin client, or a client that does not say
    member = None if member_id is None else group.members.get(member_id)
    if member is None:
        return ErrorCode.unknown_member_id
    if member_epoch != member.member_epoch:
        return ErrorCode.stale_member_epoch
    return ErrorCode.none
