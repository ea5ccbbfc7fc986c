"""Helpers to build groups for the server-side assignor tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from kgroups.coordinator.consumer_assignors import (
    GroupAssignment,
    MemberSpec,
    TopicMetadata,
)

# Topic ids; T_HIGH has its top bit set, which Kafka's signed order puts first.
T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
T3 = uuid.UUID(int=3)
T_HIGH = uuid.UUID(int=(1 << 127) | 5)


def topics(**counts: int) -> dict[uuid.UUID, TopicMetadata]:
    """topics(T1=3, T2=6): names are looked up in this module."""
    return {globals()[name]: TopicMetadata(count) for name, count in counts.items()}


def member(
    member_id: str,
    subscribed: Iterable[uuid.UUID],
    assignment: Mapping[uuid.UUID, Iterable[int]] | None = None,
    instance_id: str | None = None,
) -> MemberSpec:
    return MemberSpec(
        member_id,
        frozenset(subscribed),
        {t: frozenset(p) for t, p in (assignment or {}).items()},
        instance_id=instance_id,
    )


def rejoined(
    result: GroupAssignment, subscriptions: Mapping[str, Iterable[uuid.UUID]]
) -> list[MemberSpec]:
    """The members of ``subscriptions`` with their target assignment in
    ``result`` as their current one (new members have none)."""
    return [MemberSpec(m, frozenset(s), result.get(m, {})) for m, s in subscriptions.items()]


def plain(result: GroupAssignment) -> dict[str, dict[uuid.UUID, set[int]]]:
    """Without empty entries, with sets: easy to compare in asserts."""
    return {m: {t: set(p) for t, p in a.items() if p} for m, a in result.items()}


def sizes(result: GroupAssignment) -> dict[str, int]:
    return {m: sum(map(len, a.values())) for m, a in result.items()}


def owners(result: GroupAssignment) -> dict[tuple[uuid.UUID, int], list[str]]:
    found: dict[tuple[uuid.UUID, int], list[str]] = {}
    for member_id, assignment in result.items():
        for topic_id, partitions in assignment.items():
            for partition in partitions:
                found.setdefault((topic_id, partition), []).append(member_id)
    return found


def assert_valid(
    result: GroupAssignment,
    members: Iterable[MemberSpec],
    metadata: Mapping[uuid.UUID, TopicMetadata],
) -> None:
    """Every member is answered; every partition of a subscribed topic is
    assigned exactly once, and only to a subscriber."""
    members = list(members)
    assert set(result) == {m.member_id for m in members}
    subscriptions = {m.member_id: m.subscribed_topic_ids for m in members}
    expected = {
        (t, p) for t in set().union(*subscriptions.values()) for p in range(metadata[t].partitions)
    }
    found = owners(result)
    assert set(found) == expected
    for (topic_id, _), holders in found.items():
        assert len(holders) == 1
        assert topic_id in subscriptions[holders[0]]
