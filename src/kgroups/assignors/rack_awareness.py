"""When matching consumer racks to replica racks is worth doing (KIP-881).

A consumer that fetches from a replica in its own rack (KIP-392) avoids
cross-rack traffic, so assignors try to give members partitions with a replica
on their rack. That is pointless unless some member names a rack that holds
replicas, and unless partitions differ in where their replicas are: when every
partition is on the same racks, any member is as close as any other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set

__all__ = ["racks_worth_matching"]


def racks_worth_matching(member_racks: Iterable[str], replica_racks: Sequence[Set[str]]) -> bool:
    """``replica_racks`` holds, for every partition considered, the racks of its replicas."""
    all_replica_racks: set[str] = set().union(*replica_racks)
    if all_replica_racks.isdisjoint(member_racks):
        return False
    return any(racks != all_replica_racks for racks in replica_racks)
