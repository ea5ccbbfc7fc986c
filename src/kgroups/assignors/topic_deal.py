"""The order in which the "range" and "roundrobin" assignors deal partitions:
members in Java's order (static members by group.instance.id first, then by
member id), and the subscribed topics that exist, in Java's order of names,
each with its partition count and its subscribers in member order.

``TopicDealer.assign`` puts the group in that order once; each assignor's
``deal`` then shares the partitions out its own way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kgroups.assignors.base import PartitionRacks, WithoutMemory
from kgroups.assignors.gc_pause import cyclic_gc_paused
from kgroups.assignors.member_order import (
    java_string_key,
    members_in_java_order,
    subscribers_by_topic,
)
from kgroups.assignors.protocol import Assignment, Subscription

__all__ = ["DealOrder", "TopicDealer"]


@dataclass(frozen=True, slots=True)
class DealOrder:
    members: list[str]
    """Every member, in Java's order."""
    topics: list[tuple[str, int, list[str]]]
    """(topic, partition count, subscribers in member order) of each subscribed
    topic with partitions, in Java's order of names."""
    subscriptions: Mapping[str, Subscription]


class TopicDealer(WithoutMemory):
    @cyclic_gc_paused()
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        *,
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        members = members_in_java_order(subscriptions, subscriptions)
        subscribers = subscribers_by_topic(members, subscriptions)
        topics = [
            (topic, partitions_per_topic[topic], subscribers[topic])
            for topic in sorted(subscribers, key=java_string_key)
            if partitions_per_topic.get(topic, 0) > 0
        ]
        return self.deal(DealOrder(members, topics, subscriptions), partition_racks)

    def deal(self, order: DealOrder, racks: PartitionRacks | None) -> dict[str, Assignment]:
        """Every member's share (an empty one for a member that gets nothing)."""
        raise NotImplementedError
