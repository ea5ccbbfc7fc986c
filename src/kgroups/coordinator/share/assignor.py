"""The share groups' server-side assignor, Kafka's ``simple``.

Kafka 4.x's SimpleAssignor shares a partition between members when there
are more members than partitions: each partition gets ``ceil(members /
partitions)`` members, and each member about as many partitions as that
makes per member (3 members on 2 partitions: each partition has 2 members,
one member has both). With fewer members than partitions each partition
has one member and the members' counts differ by at most one. Current
assignments are kept where these counts allow (stickiness comes after
balance).

kgroups balances each topic among its subscribers on its own; Kafka
balances a homogeneous group across all its partitions at once, which can
differ by a partition per topic when a group subscribes to several topics.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from types import MappingProxyType

from kgroups.coordinator.consumer_assignors.spec import EMPTY_ASSIGNMENT, Assignment

NAME = "simple"


def assign(
    subscriptions: Mapping[str, frozenset[str]],
    current: Mapping[str, Assignment],
    topics: Mapping[str, tuple[uuid.UUID, int]],
) -> dict[str, Assignment]:
    """Member id to target assignment. ``subscriptions``: each member's topic
    names; ``topics``: name to (topic id, partition count) of those that exist."""
    result: dict[str, dict[uuid.UUID, frozenset[int]]] = {m: {} for m in subscriptions}
    for name in sorted({t for names in subscriptions.values() for t in names}):
        if name not in topics:
            continue
        topic_id, count = topics[name]
        if count <= 0:
            continue
        members = sorted(m for m, names in subscriptions.items() if name in names)
        for member, partitions in _assign_topic(members, topic_id, count, current).items():
            if partitions:
                result[member][topic_id] = partitions
    return {m: MappingProxyType(a) if a else EMPTY_ASSIGNMENT for m, a in result.items()}


def _assign_topic(
    members: list[str], topic_id: uuid.UUID, count: int, current: Mapping[str, Assignment]
) -> dict[str, frozenset[int]]:
    sharing = -(-len(members) // count)
    slots = sharing * count
    owned = {
        m: sorted(p for p in current.get(m, {}).get(topic_id, ()) if p < count) for m in members
    }
    # Members holding more now get the larger quotas, so fewer partitions move.
    by_holding = sorted(members, key=lambda m: (-len(owned[m]), m))
    base, extra = divmod(slots, len(members))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_holding)}
    holders: dict[int, set[str]] = {p: set() for p in range(count)}
    assigned: dict[str, set[int]] = {m: set() for m in members}
    for member in by_holding:
        for partition in owned[member]:
            if len(assigned[member]) < quota[member] and len(holders[partition]) < sharing:
                assigned[member].add(partition)
                holders[partition].add(member)
    for member in sorted(members, key=lambda m: (len(assigned[m]), m)):
        while len(assigned[member]) < quota[member]:
            free = [
                p for p in range(count) if member not in holders[p] and len(holders[p]) < sharing
            ]
            if not free:
                break
            partition = min(free, key=lambda p: (len(holders[p]), p))
            assigned[member].add(partition)
            holders[partition].add(member)
    return {m: frozenset(ps) for m, ps in assigned.items()}
