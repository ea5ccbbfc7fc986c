"""The assign step the "sticky" and "cooperative-sticky" assignors share: read
what each member owned before from its subscription, then run the sticky
algorithm (sticky_assignment). Each assignor reads owned partitions its own
way (``owned_before``) and says whether it runs under the cooperative protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from kgroups.assignors.base import PartitionRacks
from kgroups.assignors.gc_pause import cyclic_gc_paused
from kgroups.assignors.protocol import Assignment, Subscription
from kgroups.assignors.sticky_assignment import OwnedBefore, assign_sticky

__all__ = ["StickyFamily"]


class StickyFamily:
    cooperative: ClassVar[bool]
    """Whether a partition that moves is first only taken from its owner (KIP-429)."""

    @staticmethod
    def owned_before(subscription: Subscription) -> OwnedBefore:
        """What the member owned before, as its subscription reports it."""
        raise NotImplementedError

    @cyclic_gc_paused()
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        *,
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        owned = {m: self.owned_before(s) for m, s in subscriptions.items()}
        return assign_sticky(
            partitions_per_topic,
            subscriptions,
            owned,
            partition_racks,
            cooperative=self.cooperative,
        )
