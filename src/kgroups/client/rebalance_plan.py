"""Which partitions a member gives up around a rebalance, and which listener hook
hears of it (the Java ConsumerCoordinator's onJoinPrepare / onJoinComplete
decisions), without any IO.

Before rejoining:

- membership already gone: whatever is owned is *lost* -- another member may own
  it by now, so nothing is committed;
- EAGER: everything is revoked, after committing what was consumed;
- COOPERATIVE: only partitions of topics no longer subscribed are revoked (after
  the commit); the rest is kept and consumed during the rebalance (KIP-429).

After the assignment arrives, under COOPERATIVE, partitions the new assignment
no longer holds are revoked (their offsets committed first) and a follow-up
rebalance hands them to their new owner; then the new partitions are assigned.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from kgroups.assignors.base import RebalanceProtocol
from kgroups.client.consumer_record import TopicPartition

__all__ = ["AssignmentChange", "Handover", "after_assignment", "before_rejoin"]

LOST = "on_partitions_lost"
REVOKED = "on_partitions_revoked"
ASSIGNED = "on_partitions_assigned"


@dataclass(frozen=True, slots=True)
class Handover:
    """What a member gives up before it rejoins, in the order it happens:
    commit (if ``commit``), call ``hook`` with ``partitions`` (if a hook), then
    keep only ``kept`` (None: the assignment stays as it is)."""

    hook: str | None
    partitions: frozenset[TopicPartition]
    commit: bool
    kept: frozenset[TopicPartition] | None


def before_rejoin(
    protocol: RebalanceProtocol,
    membership_stands: bool,
    owned: Set[TopicPartition],
    subscription: Set[str],
) -> Handover:
    if not membership_stands:
        if not owned:
            return Handover(None, frozenset(), commit=False, kept=None)
        return Handover(LOST, frozenset(owned), commit=False, kept=frozenset())
    if protocol is RebalanceProtocol.EAGER:
        # Revoked even when nothing is owned: Java calls the hook before every rejoin.
        return Handover(REVOKED, frozenset(owned), commit=True, kept=frozenset())
    unsubscribed = frozenset(tp for tp in owned if tp.topic not in subscription)
    return Handover(
        REVOKED if unsubscribed else None,
        unsubscribed,
        commit=True,
        kept=frozenset(owned) - unsubscribed,
    )


@dataclass(frozen=True, slots=True)
class AssignmentChange:
    """What a new assignment means for a member: ``revoked`` goes first (its
    offsets committed, then the hook, then a follow-up rebalance), then
    ``added`` is announced."""

    revoked: frozenset[TopicPartition]
    added: frozenset[TopicPartition]


def after_assignment(
    protocol: RebalanceProtocol, owned: Set[TopicPartition], assigned: Set[TopicPartition]
) -> AssignmentChange:
    # Under EAGER everything was revoked before the rejoin, so nothing is owned now.
    revoked = owned - assigned if protocol is RebalanceProtocol.COOPERATIVE else frozenset()
    return AssignmentChange(frozenset(revoked), frozenset(assigned - owned))
