"""Rack matching for the sticky assignors, over numbered partitions.

When it is worth doing (see rack_awareness), a member is local to a partition
when the member's rack holds one of its replicas. Members without a rack are
local to nothing and mismatch nothing: they take what is left. Balance comes
first; locality is preferred wherever balance leaves a choice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence, Set

from kgroups.assignors.partition_space import PartitionSpace
from kgroups.assignors.protocol import TopicPartition
from kgroups.assignors.rack_awareness import racks_worth_matching

__all__ = ["RackMatcher", "rack_matcher"]

_NO_RACKS: frozenset[str] = frozenset()


class RackMatcher:
    def __init__(self, member_racks: Sequence[str | None], replica_racks: list[Set[str]]) -> None:
        self.member_racks = member_racks
        self.replica_racks = replica_racks
        members_on_rack = Counter(r for r in member_racks if r is not None)
        self._local_member_counts = [
            sum(members_on_rack[r] for r in racks) for racks in replica_racks
        ]

    def is_local(self, member: int, partition: int) -> bool:
        rack = self.member_racks[member]
        return rack is not None and rack in self.replica_racks[partition]

    def mismatch(self, member: int, partition: int) -> bool:
        """The member has a rack, and it holds no replica of the partition."""
        rack = self.member_racks[member]
        return rack is not None and rack not in self.replica_racks[partition]

    def scarcest_first(self, partitions: list[int]) -> list[int]:
        """Partitions with the fewest local members first, so that they get
        their pick before the common ones use those members up."""
        return sorted(partitions, key=self._local_member_counts.__getitem__)

    def next_local(self, partition: int, members: Sequence[int], start: int) -> int:
        """The position of the first member in ``members``, going round from
        ``start``, local to the partition; -1 if none is."""
        racks = self.replica_racks[partition]
        if not racks:
            return -1
        count = len(members)
        for step in range(count):
            position = (start + step) % count
            rack = self.member_racks[members[position]]
            if rack is not None and rack in racks:
                return position
        return -1


def rack_matcher(
    space: PartitionSpace,
    member_racks: Sequence[str | None],
    partition_racks: Mapping[TopicPartition, Set[str]] | None,
) -> RackMatcher | None:
    """A matcher when racks are worth matching, else None."""
    if not partition_racks or not any(member_racks):
        return None
    replica_racks: list[Set[str]] = [_NO_RACKS] * space.size
    for (topic, partition), racks in partition_racks.items():
        indices = space.indices_of(topic, (partition,))
        if indices:
            replica_racks[indices[0]] = racks
    present = [r for r in member_racks if r]
    if not racks_worth_matching(present, replica_racks):
        return None
    return RackMatcher([r or None for r in member_racks], replica_racks)
