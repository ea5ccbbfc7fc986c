"""Who owned each partition before this rebalance, when members disagree.

Each member says which partitions it owned and in which generation. Normally no
two members claim one partition, but a member that missed a rebalance (a long
GC pause, a network split) still claims what it had in its older generation.
The newest generation wins; two members claiming a partition in the same
newest generation cannot both be right, so neither keeps it -- and, under the
cooperative protocol, nobody may be handed it until both have let it go.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CONTESTED", "NO_OWNER", "PreviousOwners", "resolve_previous_owners"]

NO_OWNER = -1
CONTESTED = -2
"""Claimed by several members of the newest generation that claimed it."""


@dataclass(slots=True)
class PreviousOwners:
    owner: array[int]
    """For every partition number: the member that keeps its claim, NO_OWNER or
    CONTESTED."""
    kept: list[list[int]]
    """For every member: its claims that stand, without repeats, in its order."""
    contested: bool
    """Whether some partition is CONTESTED."""


def resolve_previous_owners(
    size: int, claims: list[list[int]], generations: Sequence[int]
) -> PreviousOwners:
    """``claims[m]`` are the partition numbers member ``m`` says it owned in
    generation ``generations[m]``."""
    owner = array("i", [NO_OWNER]) * size
    disputed = contested = False
    newest_first = sorted(range(len(claims)), key=generations.__getitem__, reverse=True)
    for member in newest_first:
        generation = generations[member]
        for partition in claims[member]:
            current = owner[partition]
            if current == NO_OWNER:
                owner[partition] = member
            elif current != member:
                disputed = True
                # Claims arrive newest generation first: an equal generation
                # contests the partition, an older one is stale and loses.
                if current >= 0 and generations[current] == generation:
                    owner[partition] = CONTESTED
                    contested = True
            else:
                disputed = True  # the member named it twice

    if not disputed:
        kept = claims
    else:
        kept = [
            [p for p in dict.fromkeys(c) if owner[p] == member] for member, c in enumerate(claims)
        ]
    return PreviousOwners(owner, kept, contested)
