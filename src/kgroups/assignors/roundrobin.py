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
from itertools import repeat

from kgroups.assignors.base import PartitionRacks
from kgroups.assignors.protocol import Assignment, TopicPartition
from kgroups.assignors.topic_deal import DealOrder, TopicDealer

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor(TopicDealer):
    name = "roundrobin"

    def deal(self, order: DealOrder, racks: PartitionRacks | None) -> dict[str, Assignment]:
        members = order.members
        seat_of = {member_id: seat for seat, member_id in enumerate(members)}
        dealt: list[list[TopicPartition]] = [[] for _ in members]
        next_seat = 0
        for topic, count, subscribed in order.topics:
            # The deal for one topic only visits its subscribers, in seat order,
            # starting at the first one at or after where the last deal stopped.
            seats = [seat_of[member_id] for member_id in subscribed]
            first = bisect_left(seats, next_seat) % len(seats)
            partitions = list(map(TopicPartition, repeat(topic), range(count)))
            for turn in range(min(count, len(seats))):
                dealt[seats[(first + turn) % len(seats)]].extend(partitions[turn :: len(seats)])
            next_seat = seats[(first + count - 1) % len(seats)] + 1
        return {
            member_id: Assignment(dealt[seat_of[member_id]]) for member_id in order.subscriptions
        }
