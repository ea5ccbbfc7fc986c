"""What a server-side assignor is given and what it returns.

Modelled on Kafka's group-coordinator assignor API (KIP-848): a group spec
(members with their subscriptions and current target assignments), the
subscribed topics' metadata, and the new target assignment. Topics are named
by topic id; partitions of one topic are a frozenset of partition numbers.

Assignments are immutable mappings: an assignor hands back a member's input
mapping itself when the member's assignment does not change, so a caller can
tell unchanged members by identity and nothing is copied for them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "EMPTY_ASSIGNMENT",
    "Assignment",
    "AssignorError",
    "GroupAssignment",
    "GroupSpec",
    "MemberSpec",
    "TopicMetadata",
]

Assignment = Mapping[uuid.UUID, frozenset[int]]
"""Topic id to the partitions of that topic."""

GroupAssignment = dict[str, Assignment]
"""Member id to its target assignment."""

EMPTY_ASSIGNMENT: Assignment = MappingProxyType({})


class AssignorError(Exception):
    """The assignor cannot assign this group (Kafka's PartitionAssignorException),
    e.g. a member subscribes to a topic missing from the topic metadata."""


@dataclass(frozen=True, slots=True)
class MemberSpec:
    member_id: str
    subscribed_topic_ids: frozenset[uuid.UUID]
    assignment: Assignment = field(default_factory=lambda: EMPTY_ASSIGNMENT)
    """The member's current target assignment."""
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    partitions: int
    racks: Sequence[frozenset[str]] | None = None
    """Per partition, the racks of its replicas, when known."""


@dataclass(frozen=True, slots=True)
class GroupSpec:
    members: Sequence[MemberSpec]
    homogeneous: bool | None = field(default=None)
    """Whether every member subscribes to the same topics; None: work it out.
    A coordinator that tracks subscriptions can say so and save the check."""

    def is_homogeneous(self) -> bool:
        if self.homogeneous is not None:
            return self.homogeneous
        # Members usually share subscription objects: compare each distinct
        # object once (frozensets cache their hash, so this stays cheap).
        distinct = {id(m.subscribed_topic_ids): m.subscribed_topic_ids for m in self.members}
        return len(set(distinct.values())) <= 1


def partition_count(topics: Mapping[uuid.UUID, TopicMetadata], topic_id: uuid.UUID) -> int:
    metadata = topics.get(topic_id)
    if metadata is None:
        raise AssignorError(
            f"members subscribe to topic {topic_id}, missing from the topic metadata"
        )
    return metadata.partitions
