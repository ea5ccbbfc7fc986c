"""What a KIP-848 member does to apply the coordinator's assignment: which of its
partitions to give up and which to take (the Java client's reconciliation).

The coordinator names topics by id; the member consumes by name. Ids are
resolved through the cluster metadata (and the names of partitions the member
already owns, in case a topic dropped out of the metadata); partitions of a
topic not resolved yet are left for a later round, and the member acknowledges
what it could resolve, as the Java client does.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from kgroups.client.consumer_record import TopicPartition
from kgroups.client.heartbeat_fields import OwnedPartitions

__all__ = ["Reconciliation", "plan_reconciliation"]


@dataclass(frozen=True, slots=True)
class Reconciliation:
    assigned: frozenset[TopicPartition]
    """The resolvable part of the target, by name."""
    resolved: OwnedPartitions
    """The same partitions by topic id: what the member will own and report."""
    unresolved: frozenset[uuid.UUID]
    revoked: frozenset[TopicPartition]
    """Owned, no longer assigned: given up first (on_partitions_revoked)."""
    added: frozenset[TopicPartition]
    """Assigned, not owned yet: taken next (on_partitions_assigned)."""
    names: Mapping[uuid.UUID, str]
    """The ids of ``assigned`` with their names."""


def plan_reconciliation(
    target: OwnedPartitions, names: Mapping[uuid.UUID, str], owned: set[TopicPartition]
) -> Reconciliation:
    assigned: set[TopicPartition] = set()
    resolved: set[tuple[uuid.UUID, int]] = set()
    unresolved: set[uuid.UUID] = set()
    used: dict[uuid.UUID, str] = {}
    for topic_id, partition in target:
        name = names.get(topic_id)
        if name is None:
            unresolved.add(topic_id)
            continue
        used[topic_id] = name
        assigned.add(TopicPartition(name, partition))
        resolved.add((topic_id, partition))
    return Reconciliation(
        assigned=frozenset(assigned),
        resolved=frozenset(resolved),
        unresolved=frozenset(unresolved),
        revoked=frozenset(owned - assigned),
        added=frozenset(assigned - owned),
        names=used,
    )
