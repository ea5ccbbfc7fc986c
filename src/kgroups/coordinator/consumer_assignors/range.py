"""The server-side range assignor (Kafka's RangeAssignor under KIP-848).

Per topic, the subscribers in order take contiguous ranges: with N
partitions and S subscribers each gets N // S, and the first N % S one more.
When members subscribe to the same topics and the topics have as many
partitions, every member gets the same partition numbers of each topic
(co-partitioning, which joins rely on).

It does not look at the current assignment: the assignment is recomputed
from the member order each time. Its one stickiness rule is that order:
static members first, by instance id, then the others by member id. A
rolling restart hands out new member ids but keeps instance ids, so the
assignment of a group of static members survives it unchanged.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from kgroups.coordinator.consumer_assignors.ordering import static_members_first
from kgroups.coordinator.consumer_assignors.spec import (
    GroupAssignment,
    GroupSpec,
    MemberSpec,
    TopicMetadata,
    partition_count,
)

__all__ = ["RangeAssignor"]


class RangeAssignor:
    name = "range"

    def assign(
        self, group: GroupSpec, topics: Mapping[uuid.UUID, TopicMetadata]
    ) -> GroupAssignment:
        members = static_members_first(group.members)
        subscribers: dict[uuid.UUID, int] = {}
        for member in members:
            for topic_id in member.subscribed_topic_ids:
                subscribers[topic_id] = subscribers.get(topic_id, 0) + 1
        ranges = {t: _Ranges(partition_count(topics, t), s) for t, s in subscribers.items()}
        # Members often get the same numbers of several topics: share the sets.
        shared: dict[tuple[int, int], frozenset[int]] = {}
        result: GroupAssignment = {}
        for member in members:
            result[member.member_id] = _member_ranges(member, ranges, shared)
        return result


class _Ranges:
    """The next range of one topic to hand out."""

    __slots__ = ("extra", "next", "quota")

    def __init__(self, partitions: int, subscribers: int) -> None:
        self.quota, self.extra = divmod(partitions, subscribers)
        self.next = 0

    def take(self) -> tuple[int, int]:
        start = self.next
        self.next += self.quota
        if self.extra:
            self.next += 1
            self.extra -= 1
        return start, self.next


def _member_ranges(
    member: MemberSpec,
    ranges: Mapping[uuid.UUID, _Ranges],
    shared: dict[tuple[int, int], frozenset[int]],
) -> dict[uuid.UUID, frozenset[int]]:
    assignment: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id in member.subscribed_topic_ids:
        bounds = ranges[topic_id].take()
        if bounds[0] == bounds[1]:
            continue
        partitions = shared.get(bounds)
        if partitions is None:
            partitions = shared[bounds] = frozenset(range(*bounds))
        assignment[topic_id] = partitions
    return assignment
