"""The "cooperative-sticky" assignor (KIP-429).

The sticky algorithm (see sticky_assignment) under the cooperative protocol:
members keep consuming what they own while they rejoin and report it in the
subscription's owned partitions; a partition that moves is first only taken
away, and reaches its new owner in the follow-up rebalance.

A member's generation comes from the subscription (v2+). Older members put it
in the user data instead, as a lone int32, which this assignor also writes so
that such members can read it.
"""

from __future__ import annotations

import struct

from kgroups.assignors.base import RebalanceProtocol
from kgroups.assignors.protocol import NO_GENERATION, Assignment, Subscription
from kgroups.assignors.sticky_assignment import OwnedBefore
from kgroups.assignors.sticky_family import StickyFamily

__all__ = ["CooperativeStickyAssignor"]

_GENERATION = struct.Struct(">i")


class CooperativeStickyAssignor(StickyFamily):
    name = "cooperative-sticky"
    cooperative = True
    supported_protocols: tuple[RebalanceProtocol, ...] = (
        RebalanceProtocol.COOPERATIVE,
        RebalanceProtocol.EAGER,
    )

    def __init__(self) -> None:
        self._generation = NO_GENERATION

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        return _GENERATION.pack(self._generation)

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self._generation = generation_id

    @staticmethod
    def owned_before(subscription: Subscription) -> OwnedBefore:
        generation = subscription.generation_id
        if generation < 0 and subscription.user_data is not None:
            if len(subscription.user_data) >= _GENERATION.size:
                (generation,) = _GENERATION.unpack_from(subscription.user_data)
            else:
                generation = NO_GENERATION  # unreadable
        return OwnedBefore(partitions=subscription.owned_partitions, generation=generation)
