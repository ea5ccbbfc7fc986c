"""The algorithm the "sticky" and "cooperative-sticky" assignors share.

Goals, in order:

1. Balance: with identical subscriptions the members' counts differ by at most
   one; otherwise no partition could move to a member subscribed to its topic
   in a way that makes the counts more even.
2. Stickiness: as few partitions as possible change owner. What a member owned
   before (as resolved by previous_owners) stays with it unless balance needs
   it elsewhere, or it no longer subscribes to the topic, or, with racks, its
   rack holds no replica.

The two assignors differ in where members report what they owned, and in that
the cooperative one withholds a partition from its new owner while another
member may still hold it (KIP-429): the old owner sees the partition missing
from its assignment, revokes it and rejoins, and the follow-up rebalance hands
it over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgroups.assignors.base import PartitionRacks
from kgroups.assignors.heterogeneous_subscriptions import assign_heterogeneous_subscriptions
from kgroups.assignors.identical_subscriptions import assign_identical_subscriptions
from kgroups.assignors.member_order import java_string_key
from kgroups.assignors.partition_space import PartitionSpace
from kgroups.assignors.previous_owners import NO_OWNER, resolve_previous_owners
from kgroups.assignors.protocol import NO_GENERATION, Assignment, Subscription, TopicPartition
from kgroups.assignors.sticky_racks import rack_matcher
from kgroups.assignors.sticky_user_data import StickyUserData

__all__ = ["OwnedBefore", "assign_sticky"]


@dataclass(slots=True)
class OwnedBefore:
    """What a member says it owned before this rebalance, in either shape."""

    partitions: Sequence[TopicPartition] = ()
    sticky_user_data: StickyUserData | None = None
    generation: int = NO_GENERATION


def assign_sticky(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    owned_before: Mapping[str, OwnedBefore],
    partition_racks: PartitionRacks | None,
    *,
    cooperative: bool,
) -> dict[str, Assignment]:
    # Members in Java's order of member ids: ties between members go the same
    # way in every leader.
    member_ids = sorted(subscriptions, key=java_string_key)
    topic_sets = [frozenset(subscriptions[m].topics) for m in member_ids]
    space = PartitionSpace(partitions_per_topic, frozenset().union(*topic_sets))

    claims = []
    first_numbers: dict[bytes, tuple[int, int]] | None = None
    for member_id in member_ids:
        before = owned_before[member_id]
        indices = space.indices_of_partitions(before.partitions)
        if before.sticky_user_data is not None:
            if first_numbers is None:
                first_numbers = space.first_numbers_by_utf8_name()
            indices += before.sticky_user_data.numbered(first_numbers)
        claims.append(indices)
    previous = resolve_previous_owners(
        space.size, claims, [owned_before[m].generation for m in member_ids]
    )
    racks = rack_matcher(space, [subscriptions[m].rack_id for m in member_ids], partition_racks)

    if all(topics == topic_sets[0] for topics in topic_sets):
        numbers, topic_ids = space.partition_numbers(), space.topic_ids()

        def lowest_first(partitions: list[int]) -> list[int]:
            return sorted(partitions, key=lambda p: (numbers[p], topic_ids[p]))

        kept, new = assign_identical_subscriptions(space.size, previous.kept, racks, lowest_first)
    else:
        subscribed = [
            {space.topic_id[t] for t in topics if t in space.topic_id} for topics in topic_sets
        ]
        kept, new = assign_heterogeneous_subscriptions(
            space, subscribed, previous.kept, previous.owner, racks
        )

    if cooperative and _someone_lost_a_partition(previous.contested, previous.kept, kept):
        owner = previous.owner
        for member, partitions in enumerate(new):
            new[member] = [p for p in partitions if owner[p] == NO_OWNER or owner[p] == member]

    assignments = {}
    for member, member_id in enumerate(member_ids):
        indices = kept[member] + new[member]
        indices.sort()
        assignments[member_id] = Assignment(space.partitions(indices))
    return assignments


def _someone_lost_a_partition(
    contested: bool, owned: list[list[int]], kept: list[list[int]]
) -> bool:
    """Whether any partition a member owned is not among what it keeps; only
    then can a new owner have to wait."""
    return contested or sum(map(len, owned)) != sum(map(len, kept))
