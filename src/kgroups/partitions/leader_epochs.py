"""The leader epochs a partition log knows, and the end offsets they answer.

Every batch carries the epoch of the leader that appended it (``stamping``),
so a log is a run of epochs, each starting at the first offset written at it.
A log knows an epoch from its batches, and the epoch it is led at from where
the leader started (its log end then), even before anything is written.

The rules are those of Kafka's leader epoch cache, so that OffsetForLeaderEpoch
and ListOffsets answer as Kafka does:

- ``assign``: a leader starts writing at an epoch. The same epoch again keeps
  its first start; an epoch that is not newer, or starts no later, than the
  last ones known replaces them (they were never written, or were cut off).
- ``observe``: a batch read back from the log. Only an epoch newer than every
  known one is recorded, as Kafka does when it rebuilds the cache from segments.
- ``end_offset_for``: the end of an epoch is the start of the first known epoch
  after it, and the latest epoch's is the log end; asked of an epoch that is
  not known, it answers the largest known epoch before it. An epoch older than
  every known one ends where the first one starts; one newer than the latest,
  or -1, is UNDEFINED (-1, -1).
- A log start moved forward (retention) moves the epoch that holds it to the
  new start and forgets those before it, on every answer.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import NamedTuple

__all__ = [
    "NO_EPOCH",
    "UNDEFINED_EPOCH_END",
    "EpochEndOffset",
    "EpochStart",
    "LeaderEpochs",
    "end_offset_for",
    "epoch_at_start",
]

NO_EPOCH = -1

EpochStart = tuple[int, int]
"""(leader epoch, first offset written at it), ascending in both."""


class EpochEndOffset(NamedTuple):
    leader_epoch: int
    end_offset: int


UNDEFINED_EPOCH_END = EpochEndOffset(NO_EPOCH, -1)


class LeaderEpochs:
    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: list[EpochStart] = []

    @property
    def entries(self) -> tuple[EpochStart, ...]:
        return tuple(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1][0] if self._entries else None

    def assign(self, epoch: int, start: int) -> None:
        """A leader writes at ``epoch`` from ``start`` on."""
        if epoch < 0 or start < 0:
            return
        entries = self._entries
        if entries and entries[-1][0] == epoch and entries[-1][1] <= start:
            return
        while entries and (entries[-1][0] >= epoch or entries[-1][1] >= start):
            entries.pop()
        entries.append((epoch, start))

    def observe(self, epoch: int, start: int) -> None:
        """A batch of the log, read back: at ``epoch``, from ``start``."""
        if epoch >= 0 and (not self._entries or epoch > self._entries[-1][0]):
            self.assign(epoch, start)

    def end_offset_for(self, epoch: int, log_start: int, log_end: int) -> EpochEndOffset:
        return end_offset_for(self._entries, epoch, log_start, log_end)

    def epoch_at_start(self, log_start: int) -> int:
        return epoch_at_start(self._entries, log_start)

    def __repr__(self) -> str:
        return f"LeaderEpochs({self._entries})"


def end_offset_for(
    entries: Sequence[EpochStart], epoch: int, log_start: int, log_end: int
) -> EpochEndOffset:
    """The largest known epoch up to ``epoch`` and where it ends (Kafka's
    ``endOffsetFor``), from ``entries`` as the log start leaves them."""
    if epoch == NO_EPOCH:
        return UNDEFINED_EPOCH_END
    known = _from_start(entries, log_start)
    if known and known[-1][0] == epoch:
        return EpochEndOffset(epoch, log_end)
    after = bisect_right(known, epoch, key=_epoch)
    if after == len(known):
        return UNDEFINED_EPOCH_END
    end = known[after][1]
    if after == 0:
        return EpochEndOffset(epoch, end)
    return EpochEndOffset(known[after - 1][0], end)


def epoch_at_start(entries: Sequence[EpochStart], log_start: int) -> int:
    """The epoch of the record at the log start (ListOffsets earliest): the
    first known one if it holds the start, else none."""
    known = _from_start(entries, log_start)
    return known[0][0] if known and known[0][1] <= log_start else NO_EPOCH


def _from_start(entries: Sequence[EpochStart], log_start: int) -> Sequence[EpochStart]:
    """``entries`` as Kafka truncates them from the log start: the last epoch
    starting at or before it starts there, the ones before it are gone."""
    holding = bisect_right(entries, log_start, key=_start)
    if holding == 0:
        return entries
    kept = [(entries[holding - 1][0], log_start)]
    kept += entries[holding:]
    return kept


def _epoch(entry: EpochStart) -> int:
    return entry[0]


def _start(entry: EpochStart) -> int:
    return entry[1]
