"""The leader's safety net for the COOPERATIVE protocol (KIP-429).

Under cooperative rebalancing members keep consuming what they own while the
group rebalances, so a partition must never go straight from one owner to
another in a single round: the old owner first gives it up (and rejoins), and
only the follow-up rebalance hands it to the new owner. The cooperative-sticky
assignor already works this way; the leader enforces it for any assignor, so a
partition is never consumed by two members at once.
"""

from __future__ import annotations

from collections.abc import Mapping

from kgroups.assignors.protocol import Assignment, Subscription, TopicPartition

__all__ = ["withhold_moving_partitions"]


def withhold_moving_partitions(
    assignments: Mapping[str, Assignment], subscriptions: Mapping[str, Subscription]
) -> dict[str, Assignment]:
    """The assignments without the partitions another member still owns."""
    owners: dict[TopicPartition, set[str]] = {}
    for member_id, subscription in subscriptions.items():
        for tp in subscription.owned_partitions:
            owners.setdefault(tp, set()).add(member_id)
    adjusted: dict[str, Assignment] = {}
    for member_id, assignment in assignments.items():
        kept = [tp for tp in assignment.partitions if tp not in owners or member_id in owners[tp]]
        if len(kept) == len(assignment.partitions):
            adjusted[member_id] = assignment
        else:
            adjusted[member_id] = Assignment(partitions=kept, user_data=assignment.user_data)
    return adjusted
