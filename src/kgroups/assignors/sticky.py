"""The "sticky" assignor (KIP-54), under the eager rebalance protocol.

Balanced first, then as few moves as possible (see sticky_assignment). Members
revoke everything before rejoining, so each member sends what it last got,
with its generation, in its subscription's user data (see sticky_user_data) --
the format the Java client and kafka-python use, so mixed groups keep their
partitions. A member whose user data says nothing may instead report them in
the subscription's owned partitions (v1+) and generation (v2+).
"""

from __future__ import annotations

from kgroups.assignors.base import RebalanceProtocol
from kgroups.assignors.protocol import NO_GENERATION, Assignment, Subscription, TopicPartition
from kgroups.assignors.sticky_assignment import OwnedBefore
from kgroups.assignors.sticky_family import StickyFamily
from kgroups.assignors.sticky_user_data import encode_sticky_user_data, read_sticky_user_data

__all__ = ["StickyAssignor"]


class StickyAssignor(StickyFamily):
    name = "sticky"
    cooperative = False
    supported_protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)

    def __init__(self) -> None:
        self._last_assignment: list[TopicPartition] | None = None
        self._generation = NO_GENERATION

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        if self._last_assignment is None:
            return None
        return encode_sticky_user_data(self._last_assignment, self._generation)

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self._last_assignment = list(assignment.partitions)
        self._generation = generation_id

    @staticmethod
    def owned_before(subscription: Subscription) -> OwnedBefore:
        if subscription.user_data:
            previous = read_sticky_user_data(subscription.user_data)
            if previous is None:
                return OwnedBefore()  # unreadable: as if the member owned nothing
            generation = NO_GENERATION if previous.generation is None else previous.generation
            return OwnedBefore(sticky_user_data=previous, generation=generation)
        return OwnedBefore(
            partitions=subscription.owned_partitions, generation=subscription.generation_id
        )
