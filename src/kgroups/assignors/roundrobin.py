"""The roundrobin assignor: partitions dealt out like cards.

All subscribed partitions, sorted by topic then partition, are dealt to the
members in order (static members by group.instance.id first, then by member
id), going round and round; a member that does not subscribe to a partition's
topic is passed over. With identical subscriptions the counts differ by at most
one; with different ones the deal can be lopsided, which is what the sticky
assignor is for.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from itertools import repeat

from kgroups.assignors.base import PartitionRacks, WithoutMemory
from kgroups.assignors.gc_pause import cyclic_gc_paused
from kgroups.assignors.member_order import (
    java_string_key,
    members_in_java_order,
    subscribers_by_topic,
)
from kgroups.assignors.protocol import Assignment, Subscription, TopicPartition

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor(WithoutMemory):
    name = "roundrobin"

    @cyclic_gc_paused()
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        *,
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        members = members_in_java_order(subscriptions, subscriptions)
        seat_of = {member_id: seat for seat, member_id in enumerate(members)}
        subscribers = subscribers_by_topic(members, subscriptions)

        dealt: list[list[TopicPartition]] = [[] for _ in members]
        next_seat = 0
        for topic in sorted(subscribers, key=java_string_key):
            count = partitions_per_topic.get(topic, 0)
            if count <= 0:
                continue
            # The deal for one topic only visits its subscribers, in seat order,
            # starting at the first one at or after where the last deal stopped.
            seats = [seat_of[member_id] for member_id in subscribers[topic]]
            first = bisect_left(seats, next_seat) % len(seats)
            partitions = list(map(TopicPartition, repeat(topic), range(count)))
            for turn in range(min(count, len(seats))):
                dealt[seats[(first + turn) % len(seats)]].extend(partitions[turn :: len(seats)])
            next_seat = seats[(first + count - 1) % len(seats)] + 1
        return {member_id: Assignment(dealt[seat_of[member_id]]) for member_id in subscriptions}
