"""What a partition assignor is (see registry.py to find one by its protocol name).

A consumer group's leader runs one assignor over every member's subscription
and sends each member its share. The assignor's ``name`` is the protocol name
the members put in JoinGroup, so it must be the Java client's spelling for
mixed groups to agree on one ("range", "roundrobin", "sticky",
"cooperative-sticky").

An assignor instance also lives in every member: ``subscription_user_data``
says what the member attaches to its JoinGroup, and ``on_assignment`` lets it
remember what it got (the sticky assignor sends that back in the next round).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import Protocol

from kgroups.assignors.protocol import Assignment, Subscription, TopicPartition

__all__ = ["Assignor", "PartitionRacks", "RebalanceProtocol", "WithoutMemory"]

PartitionRacks = Mapping[TopicPartition, set[str]]
"""The racks holding a replica of each partition, for rack-aware assignment."""


class RebalanceProtocol(IntEnum):
    """How members give partitions up (KIP-429); the ids are the Java client's."""

    EAGER = 0
    """Every member revokes everything before rejoining."""
    COOPERATIVE = 1
    """Members keep what they own; only partitions that move are revoked, and
    they reach their new owner in a follow-up rebalance."""


class Assignor(Protocol):
    name: str
    supported_protocols: tuple[RebalanceProtocol, ...]
    """Most preferred first."""

    def subscription_user_data(self, topics: set[str]) -> bytes | None: ...

    # Each assignor restates this signature in full: it is the contract, not shared logic.
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        *,
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        """Share the partitions of the subscribed topics among the members.

        ``partitions_per_topic`` holds the partition count of every topic that
        exists; subscribed topics missing from it are skipped. Every member of
        ``subscriptions`` (member id -> subscription) gets an entry.
        """
        ...

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        """Called in the member with the assignment it received."""
        ...


class WithoutMemory:
    """What an eager assignor that needs nothing from earlier rounds has in
    common: no user data to send, nothing to remember of its assignment."""

    supported_protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        return None

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        pass
