"""Rebalance after rebalance: members report what they got the way each
sticky assignor expects it reported."""

from __future__ import annotations

from collections.abc import Mapping

from kgroups.assignors import Assignment, Subscription
from kgroups.assignors.sticky_user_data import encode_sticky_user_data

STICKY_ASSIGNORS = ["sticky", "cooperative-sticky"]


def reporting(
    assignor_name: str,
    subscriptions: Mapping[str, Subscription],
    previous: Mapping[str, Assignment],
    generation: int,
) -> dict[str, Subscription]:
    """The members of ``subscriptions`` rejoining after ``previous`` (members
    missing from it owned nothing)."""
    rejoined = {}
    for member_id, s in subscriptions.items():
        owned = previous[member_id].partitions if member_id in previous else []
        if assignor_name == "sticky":
            rejoined[member_id] = Subscription(
                list(s.topics),
                user_data=encode_sticky_user_data(owned, generation),
                rack_id=s.rack_id,
                group_instance_id=s.group_instance_id,
            )
        else:
            rejoined[member_id] = Subscription(
                list(s.topics),
                owned_partitions=list(owned),
                generation_id=generation,
                rack_id=s.rack_id,
                group_instance_id=s.group_instance_id,
            )
    return rejoined
