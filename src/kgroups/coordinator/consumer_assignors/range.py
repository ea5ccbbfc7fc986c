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

Topics with the same subscribers and partition count get the same ranges,
so they are cut once and handed out together; members share the sets.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from kgroups.coordinator.consumer_assignors.ordering import static_members_first
from kgroups.coordinator.consumer_assignors.spec import (
    EMPTY_ASSIGNMENT,
    GroupAssignment,
    GroupSpec,
    TopicMetadata,
    partition_count,
)
from kgroups.coordinator.consumer_assignors.subscription_classes import SubscriptionClasses

__all__ = ["RangeAssignor"]


class RangeAssignor:
    name = "range"

    def assign(
        self, group: GroupSpec, topics: Mapping[uuid.UUID, TopicMetadata]
    ) -> GroupAssignment:
        members = static_members_first(group.members)
        classes = SubscriptionClasses.of(members)
        topic_ids = classes.numbers.ids
        counts = [partition_count(topics, t) for t in topic_ids]
        # Topics cut alike: same subscribers (the same list object) and count.
        alike: dict[tuple[int, int], list[uuid.UUID]] = {}
        readers: dict[int, list[int]] = {}
        for number, subscribers in enumerate(classes.subscribers()):
            alike.setdefault((id(subscribers), counts[number]), []).append(topic_ids[number])
            readers[id(subscribers)] = subscribers

        shared: dict[tuple[int, int], frozenset[int]] = {}
        given: list[dict[uuid.UUID, frozenset[int]] | None] = [None] * len(members)
        for (key, count), same in alike.items():
            subscribers = readers[key]
            quota, extra = divmod(count, len(subscribers))
            start = 0
            for position, member in enumerate(subscribers[: len(subscribers) if quota else extra]):
                end = start + quota + (1 if position < extra else 0)
                partitions = shared.get((start, end))
                if partitions is None:
                    partitions = shared[(start, end)] = frozenset(range(start, end))
                start = end
                assignment = given[member]
                if assignment is None:
                    given[member] = dict.fromkeys(same, partitions)
                elif len(same) == 1:
                    assignment[same[0]] = partitions
                else:
                    assignment.update(dict.fromkeys(same, partitions))
        return {
            spec.member_id: EMPTY_ASSIGNMENT if assignment is None else assignment
            for spec, assignment in zip(members, given, strict=True)
        }
