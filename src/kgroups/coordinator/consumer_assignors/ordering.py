"""Orders that make the assignors deterministic.

Kafka orders topic ids as its Uuid class compares them: the two 64-bit
halves as signed numbers. Members are taken in member id order, so the same
group gives the same assignment whatever order its members arrive in.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

from kgroups.assignors.member_order import java_string_key
from kgroups.coordinator.consumer_assignors.spec import MemberSpec

__all__ = ["by_member_id", "java_uuid_key", "static_members_first", "topics_in_order"]

_HALF = 1 << 64
_SIGN = 1 << 63


def java_uuid_key(topic_id: uuid.UUID) -> tuple[int, int]:
    high, low = divmod(topic_id.int, _HALF)
    return (high - _HALF if high >= _SIGN else high, low - _HALF if low >= _SIGN else low)


def topics_in_order(topic_ids: Iterable[uuid.UUID]) -> list[uuid.UUID]:
    return sorted(topic_ids, key=java_uuid_key)


def by_member_id(members: Sequence[MemberSpec]) -> list[MemberSpec]:
    return sorted(members, key=lambda m: m.member_id)


def static_members_first(members: Sequence[MemberSpec]) -> list[MemberSpec]:
    """Static members by instance id, then the others by member id, comparing
    as Java does: a rolling restart hands out new member ids, and ordering by
    instance id is what keeps the range assignment unchanged through it."""

    def key(member: MemberSpec) -> tuple[int, bytes]:
        if member.instance_id is not None:
            return (0, java_string_key(member.instance_id))
        return (1, java_string_key(member.member_id))

    return sorted(members, key=key)
