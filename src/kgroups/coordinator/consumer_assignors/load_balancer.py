"""Which member gives a partition up and which one takes it.

Kafka's heterogeneous uniform builder balances one topic at a time among
its subscribers, sorted by how many partitions they hold in all. Two ranges
of that sorted list move towards each other: the least loaded range grows
rightwards and is served round-robin, one partition per member per level;
the most loaded range grows leftwards and gives up one partition per member
per level. The topic is balanced once the two levels differ by at most one.
Members with nothing of the topic left to give are dropped from the most
loaded range.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LoadBalancer"]


class LoadBalancer:
    __slots__ = (
        "_least_end",
        "_least_level",
        "_members",
        "_most_end",
        "_most_level",
        "_most_start",
        "_next_least",
        "_next_most",
        "_sizes",
    )

    def __init__(self, members: Sequence[int], sizes: list[int]) -> None:
        """``members``: member indices, ascending, at least one; ``sizes``:
        partitions held per member index, kept up to date by the caller."""
        self._sizes = sizes
        # A stable sort of ascending indices: by size, then index.
        self._members = sorted(members, key=sizes.__getitem__)
        count = len(self._members)
        self._least_end = 0
        self._least_level = sizes[self._members[0]] - 1
        self._next_least = 0
        self._most_start = count
        self._most_end = count
        self._most_level = sizes[self._members[-1]] + 1
        self._next_most = count - 1

    def spread(self) -> int:
        """The difference between the most and the least loaded member."""
        return self._sizes[self._members[-1]] - self._sizes[self._members[0]]

    def next_least_loaded(self) -> int:
        """The member to give the next partition to."""
        members, sizes = self._members, self._sizes
        if self._next_least >= self._least_end:
            self._least_level += 1
            while (
                self._least_end < len(members)
                and sizes[members[self._least_end]] == self._least_level
            ):
                self._least_end += 1
            self._next_least = 0
        member = members[self._next_least]
        self._next_least += 1
        return member

    def next_most_loaded(self) -> int:
        """The member to take the next partition from, or -1 if none is left."""
        members, sizes = self._members, self._sizes
        if self._next_most < self._most_start:
            if self._most_end <= self._most_start and self._most_start > 0:
                # Every member of the range was dropped: restart the level
                # from the next member down, so that the range grows again.
                self._most_level = sizes[members[self._most_start - 1]]
            else:
                self._most_level -= 1
            while self._most_start > 0 and sizes[members[self._most_start - 1]] == self._most_level:
                self._most_start -= 1
            self._next_most = self._most_end - 1
        if self._next_most < 0:
            return -1
        member = members[self._next_most]
        self._next_most -= 1
        return member

    def drop_most_loaded(self) -> None:
        """Drops the member next_most_loaded just returned: it has nothing to give."""
        members = self._members
        position = self._next_most + 1
        last = self._most_end - 1
        members[position], members[last] = members[last], members[position]
        self._most_end -= 1

    def balanced(self) -> bool:
        return self._most_level - self._least_level <= 1
