"""What members of a group with one subscription may keep of their current
assignment.

A member keeps a partition only while it still subscribes to the topic and
the partition still exists (a deleted topic, or fewer partitions, take it
away). Should two members claim one partition, the first in member order
keeps it. The common case -- everything still valid -- costs one pass over
each member's topics, with the partition sets checked in C (len, max).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from kgroups.coordinator.consumer_assignors.spec import Assignment, MemberSpec
from kgroups.coordinator.consumer_assignors.subscription_classes import TopicNumbers

__all__ = ["KeptPartitions", "keep_valid_partitions"]


@dataclass(slots=True)
class KeptPartitions:
    assignments: list[Assignment]
    """Per member (in the order given), what it may keep: its own input
    mapping when all of it is still valid."""
    sizes: list[int]
    """Per member, the number of partitions kept."""
    claimed: list[set[int]]
    """Per topic number, the partitions some member keeps."""


def keep_valid_partitions(
    members: Sequence[MemberSpec], topics: TopicNumbers, counts: list[int]
) -> KeptPartitions:
    """``topics``: the topics every member subscribes to; ``counts``: their
    partition counts, by topic number."""
    assignments: list[Assignment] = []
    sizes: list[int] = []
    holders: list[list[tuple[int, frozenset[int]]]] = [[] for _ in counts]
    for index, member in enumerate(members):
        current = member.assignment
        entries = []
        size = 0
        for topic_id, partitions in current.items():
            topic = topics.get(topic_id)
            if topic is None or not partitions or max(partitions) >= counts[topic]:
                break
            entries.append((topic, partitions))
            size += len(partitions)
        else:
            for topic, partitions in entries:
                holders[topic].append((index, partitions))
            assignments.append(current)
            sizes.append(size)
            continue
        kept = {}
        size = 0
        for topic_id, partitions in current.items():
            topic = topics.get(topic_id)
            if topic is None or not partitions:
                continue
            if max(partitions) >= counts[topic]:
                partitions = frozenset(p for p in partitions if p < counts[topic])
                if not partitions:
                    continue
            kept[topic_id] = partitions
            holders[topic].append((index, partitions))
            size += len(partitions)
        assignments.append(kept)
        sizes.append(size)

    claimed: list[set[int]] = []
    for topic, held in enumerate(holders):
        union: set[int] = set().union(*(p for _, p in held))
        claimed.append(union)
        if sum(len(p) for _, p in held) != len(union):
            _first_claim_wins(topics.ids[topic], held, assignments, sizes)
    return KeptPartitions(assignments, sizes, claimed)


def _first_claim_wins(
    topic_id: uuid.UUID,
    held: list[tuple[int, frozenset[int]]],
    assignments: list[Assignment],
    sizes: list[int],
) -> None:
    seen: set[int] = set()
    for index, partitions in held:
        if seen.isdisjoint(partitions):
            seen |= partitions
            continue
        left = partitions - seen
        seen |= partitions
        kept = dict(assignments[index])
        if left:
            kept[topic_id] = left
        else:
            del kept[topic_id]
        assignments[index] = kept
        sizes[index] -= len(partitions) - len(left)
