"""Rollback by snapshot: the state a result changed, as it was before, kept
until its records are durable.

The coordinator applies its records as soon as it produces them, so a batch
that fails to append must be taken back. Every call into a shard journals
what it changes the first time it changes it: the table's group under each
id, each offset, each timer, and, before a handler changes a group's members
in a way that its records store, a copy of the whole group (taken by the
handler: copying on every heartbeat would cost O(members)). A result with
records keeps its journal here until the shell reports them durable; later
calls that touch one of its groups are kept too, as they build on it.

If the append fails, its groups are put back as they were, and so is every
later call still kept that touched them (its records, if any, may now sit in
a log without the lost ones): all their requests are answered with the
error. A failed batch that changed no stored group state (the Empty record
of a group its last member left, say) takes nothing back and its answers go
out as they were: like Kafka's classic coordinator, that record is best
effort and the next load sees the group as the log has it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from kgroups.coordinator.delayed_operations import DelayedOperation
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.offsets import CommittedOffset, TopicPartition
from kgroups.coordinator.result import Response
from kgroups.coordinator.timers import TimerKey


class Snapshot:
    """What one call changed, each thing as it was before the call's first change."""

    __slots__ = ("copies", "groups", "offsets", "slots", "timers")

    def __init__(self, groups: tuple[str, ...] = ()) -> None:
        # The groups the request names, whether or not it changed them.
        self.groups = groups
        # Groups before their members changed (None: the group did not exist).
        self.copies: dict[str, ClassicGroup | None] = {}
        # The table's group object under an id (None: no group).
        self.slots: dict[str, ClassicGroup | None] = {}
        self.offsets: dict[tuple[str, TopicPartition], CommittedOffset | None] = {}
        self.timers: dict[TimerKey, tuple[int, DelayedOperation] | None] = {}

    def stored(self) -> set[str]:
        """The groups whose stored state (members, offsets, existence) changed."""
        groups = set(self.copies)
        groups.update(self.slots)
        groups.update(group_id for group_id, _ in self.offsets)
        return groups

    def touched(self) -> set[str]:
        groups = self.stored()
        groups.update(self.groups)
        groups.update(key.group_id for key in self.timers)
        groups.discard("")  # the shard-wide retention timer
        return groups


@dataclass(eq=False, slots=True)
class Kept:
    """A call whose changes may still have to be taken back."""

    batch_id: int | None  # None: no records of its own; it built on kept state
    snapshot: Snapshot
    touched: frozenset[str]
    replies: tuple[tuple[object, Response], ...]


class InFlight:
    """The kept calls of one shard, in the order they were applied."""

    def __init__(self) -> None:
        self._kept: list[Kept] = []
        self._touching: Counter[str] = Counter()
        self._copying: Counter[str] = Counter()

    def __bool__(self) -> bool:
        return bool(self._kept)

    def touches(self, group_id: str) -> bool:
        return group_id in self._touching

    def touches_any(self, groups: set[str]) -> bool:
        return any(group_id in self._touching for group_id in groups)

    def holds_copy(self, group_id: str) -> bool:
        """Whether a kept call can put the whole group back, members included."""
        return group_id in self._copying

    def keep(self, kept: Kept) -> None:
        self._kept.append(kept)
        self._touching.update(kept.touched)
        self._copying.update(kept.snapshot.copies.keys())

    def durable(self, batch_id: int) -> None:
        """The batch is durable, and so is everything appended before it."""
        index = self._index(batch_id)
        if index is None:
            return
        self._release(self._kept[: index + 1])
        del self._kept[: index + 1]
        # Calls without records were only at risk from batches before them.
        while self._kept and self._kept[0].batch_id is None:
            self._release([self._kept.pop(0)])

    def take_failed(self, batch_id: int) -> tuple[list[Kept], set[str]] | None:
        """The failed batch's call and every later one that touched its groups
        (transitively), no longer kept; with the groups they restore. None if
        the batch is not kept (taken back already, or a later batch was durable)."""
        index = self._index(batch_id)
        if index is None:
            return None
        first = self._kept[index]
        groups = first.snapshot.stored()
        failed = [first]
        for kept in self._kept[index + 1 :]:
            if not kept.touched.isdisjoint(groups):
                failed.append(kept)
                groups.update(kept.touched)
        taken = {id(kept) for kept in failed}
        self._kept = [kept for kept in self._kept if id(kept) not in taken]
        self._release(failed)
        return failed, groups

    def _index(self, batch_id: int) -> int | None:
        for index, kept in enumerate(self._kept):
            if kept.batch_id == batch_id:
                return index
        return None

    def _release(self, released: list[Kept]) -> None:
        for kept in released:
            _forget(self._touching, kept.touched)
            _forget(self._copying, kept.snapshot.copies)


def _forget(counter: Counter[str], keys: Iterable[str]) -> None:
    for key in keys:
        left = counter[key] - 1
        if left:
            counter[key] = left
        else:
            del counter[key]
