"""The range assignor: each topic's partitions cut into contiguous ranges.

Per topic, the subscribed members are put in order (static members by
group.instance.id first, then by member id) and the partitions in numeric
order; with n partitions and m members the first n % m members get
n // m + 1 partitions and the rest n // m. Topics with the same partition count
and the same members are therefore co-partitioned: partition i of each lands
on the same member.

Rack-aware assignment (KIP-881) starts first when members name their rack and
some partitions have replicas on only some racks: it hands out the partitions
whose replica racks include the member's rack, within the same per-member
quotas, and the plain range pass then places what is left. For co-partitioned
topics it keeps partition i of all of them together, choosing for it the first
member whose rack holds a replica of every one. Members without a rack match
any partition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import islice, repeat

from kgroups.assignors.base import PartitionRacks
from kgroups.assignors.member_order import java_string_key
from kgroups.assignors.protocol import Assignment, Subscription, TopicPartition
from kgroups.assignors.rack_awareness import racks_worth_matching
from kgroups.assignors.topic_deal import DealOrder, TopicDealer

__all__ = ["RangeAssignor"]


class RangeAssignor(TopicDealer):
    name = "range"

    def deal(self, order: DealOrder, racks: PartitionRacks | None) -> dict[str, Assignment]:
        topics, subscriptions = order.topics, order.subscriptions
        member_racks = {m: s.rack_id for m, s in subscriptions.items() if s.rack_id}
        if member_racks and racks:
            states = [
                _TopicRanges(topic, count, subscribed, member_racks, racks)
                for topic, count, subscribed in topics
            ]
            if any(t.needs_rack_matching for t in states):
                return _assign_with_racks(states, subscriptions)

        assignments: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        for topic, count, subscribed in topics:
            partitions = list(map(TopicPartition, repeat(topic), range(count)))
            quota, members_with_extra = divmod(count, len(subscribed))
            start = 0
            for seat, member_id in enumerate(subscribed):
                stop = start + quota + (1 if seat < members_with_extra else 0)
                assignments[member_id] += partitions[start:stop]
                start = stop
        return {m: Assignment(partitions) for m, partitions in assignments.items()}


def _assign_with_racks(
    topics: list[_TopicRanges], subscriptions: Mapping[str, Subscription]
) -> dict[str, Assignment]:
    owned: dict[str, dict[str, list[int]]] = {m: {} for m in subscriptions}
    _assign_matching_racks(topics, owned)
    for t in topics:
        t.assign_ranges(_any_partition, owned)
    result = {}
    for member_id, by_topic in owned.items():
        partitions: list[TopicPartition] = []
        for topic in sorted(by_topic, key=java_string_key):
            partitions.extend(map(TopicPartition, repeat(topic), sorted(by_topic[topic])))
        result[member_id] = Assignment(partitions)
    return result


def _any_partition(member_id: str, partition: int) -> bool:
    return True


class _TopicRanges:
    """One topic's quotas and what is still unassigned."""

    def __init__(
        self,
        topic: str,
        count: int,
        members: list[str],
        member_racks: Mapping[str, str],
        partition_racks: PartitionRacks | None,
    ) -> None:
        self.topic = topic
        self.count = count
        self.members = members
        self.member_racks = {m: member_racks[m] for m in members if m in member_racks}
        self.unassigned = dict.fromkeys(range(count))
        self.assigned_count = dict.fromkeys(members, 0)
        self.base_quota, self.members_with_extra = divmod(count, len(members))

        self.replica_racks: list[set[str]] = []
        if self.member_racks:
            racks = partition_racks or {}
            self.replica_racks = [racks.get(TopicPartition(topic, p), set()) for p in range(count)]
        self.needs_rack_matching = racks_worth_matching(
            self.member_racks.values(), self.replica_racks
        )

    def racks_match(self, member_id: str, partition: int) -> bool:
        rack = self.member_racks.get(member_id)
        return rack is None or (bool(self.replica_racks) and rack in self.replica_racks[partition])

    def room(self, member_id: str) -> int:
        """How many more partitions of this topic the member may still take."""
        quota = self.base_quota + (1 if self.members_with_extra > 0 else 0)
        return max(0, quota - self.assigned_count[member_id])

    def give(
        self, member_id: str, partitions: list[int], owned: dict[str, dict[str, list[int]]]
    ) -> None:
        owned[member_id].setdefault(self.topic, []).extend(partitions)
        self.assigned_count[member_id] += len(partitions)
        if self.assigned_count[member_id] > self.base_quota:
            self.members_with_extra -= 1
        for partition in partitions:
            del self.unassigned[partition]

    def assign_ranges(
        self,
        may_assign: Callable[[str, int], bool],
        owned: dict[str, dict[str, list[int]]],
    ) -> None:
        """Each member in order takes the lowest unassigned partitions it may
        have, up to its quota."""
        for member_id in self.members:
            if not self.unassigned:
                break
            wanted = (p for p in self.unassigned if may_assign(member_id, p))
            picked = list(islice(wanted, self.room(member_id)))
            if picked:
                self.give(member_id, picked, owned)


def _assign_matching_racks(
    topics: list[_TopicRanges], owned: dict[str, dict[str, list[int]]]
) -> None:
    co_partitioned: dict[tuple[tuple[str, ...], int], list[_TopicRanges]] = {}
    for t in topics:
        co_partitioned.setdefault((tuple(t.members), t.count), []).append(t)
    for (members, count), group in co_partitioned.items():
        if len(group) > 1:
            _assign_co_partitioned(list(members), count, group, owned)
        elif group[0].needs_rack_matching:
            group[0].assign_ranges(group[0].racks_match, owned)


def _assign_co_partitioned(
    members: list[str],
    count: int,
    topics: list[_TopicRanges],
    owned: dict[str, dict[str, list[int]]],
) -> None:
    """Partition i of every topic goes to one member whose rack suits them all."""
    remaining = dict.fromkeys(members)
    for partition in range(count):
        chosen = next(
            (
                m
                for m in remaining
                if all(t.racks_match(m, partition) and t.room(m) > 0 for t in topics)
            ),
            None,
        )
        if chosen is None:
            continue
        for t in topics:
            t.give(chosen, [partition], owned)
        if all(t.room(chosen) == 0 for t in topics):
            del remaining[chosen]
            if not remaining:
                return
