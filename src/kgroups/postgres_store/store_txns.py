"""The transactions of a partition led in cluster mode, as far as the store
has committed them: what the last stable offset and read_committed fetches
may be told.

The producers' state follows every append at once, as on a local log, and a
marker ends its transaction there when it is appended. But the marker is in
the log only once the store commits it; until then the transaction it ends
is *unsettled* and still holds the last stable offset back (Kafka's leader
keeps such transactions as "unreplicated" until the high watermark passes
their marker). So the LSO never passes a marker the store may not hold, and
an abort is told to read_committed fetches only once its index row is
committed with it: if the commit fails, the log is dropped and the next one
reads the transaction as still open from the store.

The aborts committed here are kept in memory for the offsets from
``known_from`` on (where this leader's log began, later the start of the
batches it holds in memory): a fetch from there is answered here, an older
one raises ``NotInMemory`` and the home reads the store's index.
"""

from __future__ import annotations

from bisect import bisect_left

from kgroups.partitions.log import NotInMemory
from kgroups.postgres_store.aborted_txns import AbortedTxn

__all__ = ["StoreTransactions"]


class StoreTransactions:
    def __init__(self, known_from: int) -> None:
        self.known_from = known_from
        # (first offset, marker offset, index entry of an abort), in marker order:
        # transactions whose marker is appended but not yet committed.
        self._unsettled: list[tuple[int, int, AbortedTxn | None]] = []
        # Committed aborts with markers from known_from on, in marker order.
        self._aborted: list[AbortedTxn] = []
        self._last_offsets: list[int] = []

    def ended(self, first_offset: int, marker_offset: int, aborted: AbortedTxn | None) -> None:
        """A marker at ``marker_offset`` was appended, not yet committed."""
        self._unsettled.append((first_offset, marker_offset, aborted))

    def first_unsettled(self) -> int | None:
        """The first offset of the oldest transaction whose marker is not committed."""
        if not self._unsettled:
            return None
        return min(first for first, _marker, _entry in self._unsettled)

    def unsent_aborts(self, from_offset: int) -> list[AbortedTxn]:
        """The index entries of the aborts among the batches from ``from_offset``."""
        return [e for _f, marker, e in self._unsettled if e is not None and marker >= from_offset]

    def committed(self, last_offset: int) -> None:
        """The store holds everything up to ``last_offset``."""
        done = 0
        for _first, marker, entry in self._unsettled:
            if marker > last_offset:
                break
            done += 1
            if entry is not None:
                self._aborted.append(entry)
                self._last_offsets.append(entry.last_offset)
        del self._unsettled[:done]

    def aborted(self, start: int, end: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the committed aborts overlapping
        [start, end); ``NotInMemory`` for a start before ``known_from``."""
        if start < self.known_from:
            raise NotInMemory
        i = bisect_left(self._last_offsets, start)
        return [(e.producer_id, e.first_offset) for e in self._aborted[i:] if e.first_offset < end]

    def forget_below(self, offset: int) -> None:
        """Answer from ``offset`` on only (the log start moved, or the batches
        before it are no longer in memory)."""
        if offset <= self.known_from:
            return
        self.known_from = offset
        i = bisect_left(self._last_offsets, offset)
        if i:
            del self._aborted[:i]
            del self._last_offsets[:i]

    def clear_unsettled(self) -> None:
        """The commit failed: the markers not committed may never be."""
        self._unsettled.clear()
