"""The group leader's part of a rebalance, without IO: read every member's
subscription from the JoinGroup answer, run the chosen assignor over the
partition counts, and turn the result into SyncGroup assignments.

Under COOPERATIVE the leader withholds partitions another member still owns,
whatever the assignor returned (see cooperative_assignment).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kio.schema.sync_group.v5.request import SyncGroupRequestAssignment

from kgroups.assignors.base import Assignor, RebalanceProtocol
from kgroups.assignors.protocol import Subscription, decode_subscription, encode_assignment
from kgroups.client.cooperative_assignment import withhold_moving_partitions
from kgroups.errors import ErrorCode, KafkaError

__all__ = ["assign_partitions", "chosen_assignor", "member_subscriptions", "partition_counts"]

log = logging.getLogger(__name__)


def chosen_assignor(assignors: Iterable[Assignor], name: str | None) -> Assignor:
    for assignor in assignors:
        if assignor.name == name:
            return assignor
    raise KafkaError(
        ErrorCode.inconsistent_group_protocol,
        f"the coordinator chose assignor {name!r}, which this member does not offer",
    )


def member_subscriptions(members: Iterable[Any]) -> dict[str, Subscription]:
    """Every member's subscription, by member id, from a JoinGroup answer."""
    subscriptions: dict[str, Subscription] = {}
    for member in members:
        subscription = decode_subscription(bytes(member.metadata))
        subscription.group_instance_id = member.group_instance_id
        subscriptions[member.member_id] = subscription
    return subscriptions


def partition_counts(metadata: Any, topics: Iterable[str]) -> dict[str, int]:
    """Partition count of each topic the metadata knows without error."""
    counts: dict[str, int] = {}
    for topic in topics:
        info = metadata.topics.get(topic)
        if info is not None and info.error == ErrorCode.none and info.partitions:
            counts[topic] = len(info.partitions)
    return counts


def assign_partitions(
    group_id: str,
    assignor: Assignor,
    protocol: RebalanceProtocol,
    counts: dict[str, int],
    subscriptions: dict[str, Subscription],
) -> tuple[SyncGroupRequestAssignment, ...]:
    assignments = assignor.assign(counts, subscriptions)
    if protocol is RebalanceProtocol.COOPERATIVE:
        assignments = withhold_moving_partitions(assignments, subscriptions)
    log.info(
        "group %s: leader assigned with %s: %s",
        group_id,
        assignor.name,
        {m: sorted(a.partitions) for m, a in assignments.items()},
    )
    return tuple(
        SyncGroupRequestAssignment(member_id=member_id, assignment=encode_assignment(a))
        for member_id, a in assignments.items()
    )
