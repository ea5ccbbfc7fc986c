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

A group's state comes in two parts, its members (with their timers) and
its offsets, as the shell's pending writes see it. If the append fails, the
parts it stored are put back as they were, and so is every later call still
kept that touched one of them (its records, if any, may now sit in a log
without the lost ones): all their requests are answered with the error. A
failed commit takes back offsets only: the member that sent it was alive,
so its session stays extended. A failed batch that changed no stored group
state (the Empty record of a group its last member left, say) takes nothing
back and its answers go out as they were: like Kafka's classic coordinator,
that record is best effort and the next load sees the group as the log has it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from kgroups.coordinator.consumer import ConsumerTimerKey
from kgroups.coordinator.consumer.table import Change
from kgroups.coordinator.delayed_operations import DelayedOperation
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.offsets import CommittedOffset, TopicPartition
from kgroups.coordinator.result import Response
from kgroups.coordinator.share.table import Change as ShareChange
from kgroups.coordinator.timers import TimerKey

T = TypeVar("T")

MEMBERS = "members"
OFFSETS = "offsets"
# A part of a group's state: (group id, MEMBERS or OFFSETS).
Part = tuple[str, str]


class Snapshot:
    """What one call changed, each thing as it was before the call's first change."""

    __slots__ = (
        "consumer",
        "consumer_timers",
        "copies",
        "offsets",
        "reads",
        "share",
        "slots",
        "timers",
    )

    def __init__(self, reads: tuple[Part, ...] = ()) -> None:
        # The parts the request's answer shows, whether or not it changed them.
        self.reads = reads
        # Groups before their members changed (None: the group did not exist).
        self.copies: dict[str, ClassicGroup | None] = {}
        # The table's group object under an id (None: no group).
        self.slots: dict[str, ClassicGroup | None] = {}
        self.offsets: dict[tuple[str, TopicPartition], CommittedOffset | None] = {}
        self.timers: dict[TimerKey, tuple[int, DelayedOperation] | None] = {}
        # Consumer groups: the records that undo the call's records, in order,
        # and their timers as they were.
        self.consumer: list[Change] = []
        self.consumer_timers: dict[ConsumerTimerKey, tuple[int, int] | None] = {}
        # Share groups: the records that undo the call's records, in order.
        self.share: list[ShareChange] = []

    def stored(self) -> set[Part]:
        """The parts of groups whose stored state changed."""
        parts = {(group_id, OFFSETS) for group_id, _ in self.offsets}
        for group_id in (*self.copies, *self.slots):
            parts.add((group_id, MEMBERS))
            parts.add((group_id, OFFSETS))
        parts.update((key.group_id, MEMBERS) for key, _ in self.consumer)
        parts.update((key.group_id, MEMBERS) for key, _ in self.share)
        return parts

    def touched(self) -> set[Part]:
        parts = self.stored()
        parts.update(self.reads)
        parts.update((key.group_id, MEMBERS) for key in self.timers if key.group_id)
        parts.update((key.group_id, MEMBERS) for key in self.consumer_timers)
        return parts


@dataclass(eq=False, slots=True)
class Kept:
    """A call whose changes may still have to be taken back."""

    batch_id: int | None  # None: no records of its own; it built on kept state
    snapshot: Snapshot
    touched: frozenset[Part]
    replies: tuple[tuple[object, Response], ...]


class InFlight:
    """The kept calls of one shard, in the order they were applied."""

    def __init__(self) -> None:
        self._kept: list[Kept] = []
        # How many kept calls touched each part, copied each group.
        self._touching: dict[Part, int] = {}
        self._copying: dict[str, int] = {}

    def __bool__(self) -> bool:
        return bool(self._kept)

    def touches(self, part: Part) -> bool:
        return part in self._touching

    def touches_any(self, parts: set[Part]) -> bool:
        return any(part in self._touching for part in parts)

    def holds_copy(self, group_id: str) -> bool:
        """Whether a kept call can put the whole group back, members included."""
        return group_id in self._copying

    def keep(self, kept: Kept) -> None:
        self._kept.append(kept)
        _count(self._touching, kept.touched)
        _count(self._copying, kept.snapshot.copies)

    def durable(self, batch_id: int) -> None:
        """The batch is durable, and so is everything appended before it."""
        index = self._index(batch_id)
        if index is None:
            return
        self._release(self._kept[: index + 1])
        del self._kept[: index + 1]
        self._drop_leading_calls_without_records()

    def take_failed(self, batch_id: int) -> tuple[list[Kept], set[Part]] | None:
        """The failed batch's call and every later one that touched what it
        stored (transitively), no longer kept; with the parts they restore.
        None if the batch is not kept (taken back already, or a later batch
        was durable, which makes every earlier one durable too)."""
        index = self._index(batch_id)
        if index is None:
            return None
        first = self._kept[index]
        parts = first.snapshot.stored()
        failed = [first]
        for kept in self._kept[index + 1 :]:
            if not kept.touched.isdisjoint(parts):
                failed.append(kept)
                parts.update(kept.touched)
        taken = {id(kept) for kept in failed}
        self._kept = [kept for kept in self._kept if id(kept) not in taken]
        self._release(failed)
        self._drop_leading_calls_without_records()
        return failed, parts

    def _drop_leading_calls_without_records(self) -> None:
        # They were only at risk from batches before them.
        while self._kept and self._kept[0].batch_id is None:
            self._release([self._kept.pop(0)])

    def _index(self, batch_id: int) -> int | None:
        for index, kept in enumerate(self._kept):
            if kept.batch_id == batch_id:
                return index
        return None

    def _release(self, released: list[Kept]) -> None:
        for kept in released:
            _forget(self._touching, kept.touched)
            _forget(self._copying, kept.snapshot.copies)


def _count(counter: dict[T, int], keys: Iterable[T]) -> None:
    for key in keys:
        counter[key] = counter.get(key, 0) + 1


def _forget(counter: dict[T, int], keys: Iterable[T]) -> None:
    for key in keys:
        left = counter[key] - 1
        if left:
            counter[key] = left
        else:
            del counter[key]
