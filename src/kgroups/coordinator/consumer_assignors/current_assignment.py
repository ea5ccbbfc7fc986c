"""What members may keep of their current assignment.

A member keeps a partition only while it still subscribes to the topic and
the partition still exists (a deleted topic, or fewer partitions, take it
away). Should two members claim one partition, the first in member order
keeps it. The common case -- everything still valid -- costs one pass over
each member's topics, with the partition sets checked in C (len, max).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgroups.coordinator.consumer_assignors.spec import Assignment, MemberSpec

__all__ = ["KeptPartitions", "keep_valid_partitions"]


@dataclass(slots=True)
class KeptPartitions:
    assignments: list[Assignment]
    """Per member (in the order given), what it may keep: its own input
    mapping when all of it is still valid."""
    sizes: list[int]
    """Per member, the number of partitions kept."""
    claimed: dict[uuid.UUID, set[int]]
    """Per subscribed topic, the partitions some member keeps."""


def keep_valid_partitions(
    members: Sequence[MemberSpec], counts: Mapping[uuid.UUID, int]
) -> KeptPartitions:
    """``counts``: partition count of every topic that some member subscribes to."""
    assignments: list[Assignment] = []
    sizes: list[int] = []
    holders: dict[uuid.UUID, list[frozenset[int]]] = {t: [] for t in counts}
    for member in members:
        current = member.assignment
        subscribed = member.subscribed_topic_ids
        size = 0
        for topic_id, partitions in current.items():
            count = counts.get(topic_id)
            if count is None or not partitions or max(partitions) >= count:
                break
            if topic_id not in subscribed:
                break
            size += len(partitions)
        else:
            for topic_id, partitions in current.items():
                holders[topic_id].append(partitions)
            assignments.append(current)
            sizes.append(size)
            continue
        kept = _valid_part(current, subscribed, counts)
        for topic_id, partitions in kept.items():
            holders[topic_id].append(partitions)
        assignments.append(kept)
        sizes.append(sum(map(len, kept.values())))

    claimed: dict[uuid.UUID, set[int]] = {}
    shared: list[uuid.UUID] = []
    for topic_id, sets in holders.items():
        union: set[int] = set().union(*sets)
        claimed[topic_id] = union
        if sum(map(len, sets)) != len(union):
            shared.append(topic_id)
    if shared:
        _first_claim_wins(shared, assignments, sizes)
    return KeptPartitions(assignments, sizes, claimed)


def _valid_part(
    current: Assignment, subscribed: frozenset[uuid.UUID], counts: Mapping[uuid.UUID, int]
) -> dict[uuid.UUID, frozenset[int]]:
    kept: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id, partitions in current.items():
        count = counts.get(topic_id)
        if count is None or topic_id not in subscribed or not partitions:
            continue
        if max(partitions) >= count:
            partitions = frozenset(p for p in partitions if p < count)
            if not partitions:
                continue
        kept[topic_id] = partitions
    return kept


def _first_claim_wins(
    topics: list[uuid.UUID], assignments: list[Assignment], sizes: list[int]
) -> None:
    for topic_id in topics:
        seen: set[int] = set()
        for index, assignment in enumerate(assignments):
            partitions = assignment.get(topic_id)
            if partitions is None:
                continue
            if seen.isdisjoint(partitions):
                seen |= partitions
                continue
            left = partitions - seen
            seen |= partitions
            kept = dict(assignment)
            if left:
                kept[topic_id] = left
            else:
                del kept[topic_id]
            assignments[index] = kept
            sizes[index] -= len(partitions) - len(left)
