"""Sticky assignment when every member subscribes to the same topics.

Then any member can take any partition, the right counts are known up front --
with N partitions and M members, N % M members get ceil(N/M) and the rest
floor(N/M) -- and the work is counting, not searching (the Java client calls
this the constrained assignment):

1. Each member keeps what it owned, up to its quota. Members owning more keep
   the lowest-numbered partitions (by partition, then topic, so that what a
   member keeps is spread over topics); the first members owning at least
   ceil(N/M) keep that many while ceil(N/M) places remain.
2. With racks, the unowned partitions go to members on a replica's rack,
   within the quotas, the partitions with the fewest such members first.
3. The rest are dealt round-robin to the members still under floor(N/M), in
   member order, and then one each to members at floor(N/M), in the order
   they got there, until the ceil(N/M) places are used up.

Partitions are numbers here (see partition_space); the deal of step 3 works on
whole rounds at a time with list slices, which is what makes a million
partitions take well under a second.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress

from kgroups.assignors.sticky_racks import RackMatcher

__all__ = ["assign_identical_subscriptions"]

_FLIP = bytes.maketrans(b"\x00\x01", b"\x01\x00")


def assign_identical_subscriptions(
    size: int,
    owned: list[list[int]],
    racks: RackMatcher | None,
    lowest_first: Callable[[list[int]], list[int]],
) -> tuple[list[list[int]], list[list[int]]]:
    """``owned[m]`` are the partitions member ``m`` may keep (members in the
    group's order); ``lowest_first`` orders partitions for step 1.

    Returns what each member keeps and what it newly gets.
    """
    members = len(owned)
    kept: list[list[int]] = [[] for _ in range(members)]
    new: list[list[int]] = [[] for _ in range(members)]
    if not members:
        return kept, new
    quotas = _Quotas(size, members)
    taken = bytearray(size)
    for member, partitions in enumerate(owned):
        if racks is not None:
            partitions = [p for p in partitions if not racks.mismatch(member, p)]
        keep = quotas.keep_owned(member, len(partitions))
        if keep < len(partitions):
            partitions = lowest_first(partitions)[:keep]
        kept[member] = partitions
        for partition in partitions:
            taken[partition] = 1

    unowned = list(compress(range(size), taken.translate(_FLIP)))
    if racks is not None:
        unowned = _deal_within_racks(racks.scarcest_first(unowned), racks, quotas, kept, new)
    _deal_round_robin(unowned, quotas, kept, new)
    return kept, new


class _Quotas:
    """Which members still have room, following the quota rules."""

    def __init__(self, size: int, members: int) -> None:
        self.min_quota, self.over_min_places = divmod(size, members)
        self.max_quota = self.min_quota + (1 if self.over_min_places else 0)
        self.over_min = 0
        self.under_min: list[int] = []
        """Members below min_quota, in member order."""
        self.at_min: list[int] = []
        """Members at min_quota that may still take one more, first come first."""

    def keep_owned(self, member: int, owned: int) -> int:
        """How many of its ``owned`` partitions the member keeps."""
        if owned < self.min_quota:
            self.under_min.append(member)
            return owned
        if owned >= self.max_quota and self.over_min < self.over_min_places:
            self._went_over_min()
            return self.max_quota
        if self.over_min < self.over_min_places:
            self.at_min.append(member)
        return self.min_quota

    def _went_over_min(self) -> None:
        self.over_min += 1
        if self.over_min == self.over_min_places:
            self.at_min.clear()

    def reached_min(self, member: int) -> None:
        if self.min_quota < self.max_quota and self.over_min < self.over_min_places:
            self.at_min.append(member)

    def took_one_over_min(self, position: int) -> None:
        del self.at_min[position]
        self._went_over_min()


def _deal_within_racks(
    unowned: list[int],
    racks: RackMatcher,
    quotas: _Quotas,
    kept: list[list[int]],
    new: list[list[int]],
) -> list[int]:
    """Step 2; returns the partitions left for step 3, in order."""
    left = []
    start = 0
    for partition in unowned:
        under_min = quotas.under_min
        position = racks.next_local(partition, under_min, start)
        if position >= 0:
            member = under_min[position]
            new[member].append(partition)
            if len(kept[member]) + len(new[member]) >= quotas.min_quota:
                del under_min[position]
                quotas.reached_min(member)
            else:
                position += 1
            start = position % len(under_min) if under_min else 0
            continue
        position = racks.next_local(partition, quotas.at_min, 0) if quotas.at_min else -1
        if position >= 0:
            new[quotas.at_min[position]].append(partition)
            quotas.took_one_over_min(position)
            continue
        left.append(partition)
    return left


def _deal_round_robin(
    unowned: list[int], quotas: _Quotas, kept: list[list[int]], new: list[list[int]]
) -> None:
    """Step 3, a whole number of rounds per slice: each round gives every
    member under min_quota one partition, in member order."""
    need = {m: quotas.min_quota - len(kept[m]) - len(new[m]) for m in quotas.under_min}
    under_min = quotas.under_min
    dealt = 0
    while under_min and dealt < len(unowned):
        width = len(under_min)
        rounds = min(min(need[m] for m in under_min), (len(unowned) - dealt) // width)
        if rounds == 0:
            # Fewer partitions left than members under min_quota.
            for member in under_min[: len(unowned) - dealt]:
                new[member].append(unowned[dealt])
                dealt += 1
                need[member] -= 1
        else:
            stop = dealt + rounds * width
            for seat, member in enumerate(under_min):
                new[member].extend(unowned[dealt + seat : stop : width])
                need[member] -= rounds
            dealt = stop
        for member in under_min:
            if need[member] == 0:
                quotas.reached_min(member)
        under_min[:] = [m for m in under_min if need[m] > 0]

    for partition in unowned[dealt:]:
        if not quotas.at_min:
            raise AssertionError("a partition is left but every member is at its quota")
        member = quotas.at_min[0]
        new[member].append(partition)
        quotas.took_one_over_min(0)
