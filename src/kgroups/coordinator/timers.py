"""Deadlines for a shard's delayed operations, cheap at 100k members.

One entry per key — a member's session, a group's join or sync phase — so
scheduling a key again replaces its deadline. A heap orders the deadlines;
cancelled and postponed keys are cleaned up lazily when they reach the top,
so a heartbeat is a dict write and pushes nothing unless it brings a deadline
forward. There is no task per timer: the shell asks for ``next_deadline()``
and calls ``pop_due(now)``.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
P = TypeVar("P")


class TimerKind(enum.Enum):
    # A member's session (DelayedHeartbeat); also a new member's join timeout
    # and a pending member's wait for its second JoinGroup.
    MEMBER = "member"
    # The join phase: DelayedJoin or InitialDelayedJoin.
    JOIN = "join"
    # Members that have not sent SyncGroup after the join phase (DelayedSync).
    SYNC = "sync"
    # The shard-wide sweep for expired offsets.
    RETENTION = "retention"


@dataclass(frozen=True, slots=True)
class TimerKey:
    kind: TimerKind
    group_id: str
    member_id: str = ""
    # A heartbeat hashes its key several times (entries, heap index, journal).
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.kind, self.group_id, self.member_id)))

    def __hash__(self) -> int:
        return self._hash


class TimerQueue(Generic[K, P]):
    def __init__(self) -> None:
        self._entries: dict[K, tuple[int, P]] = {}
        # (deadline, tie-breaker, key); may hold stale entries.
        self._heap: list[tuple[int, int, K]] = []
        # The earliest deadline a key has in the heap, to skip its duplicates.
        self._queued_at: dict[K, int] = {}
        self._sequence = 0
        # While set, each key's entry before its first change (None: no entry).
        self.journal: dict[K, tuple[int, P] | None] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: K) -> bool:
        return key in self._entries

    def schedule(self, key: K, deadline_ms: int, payload: P) -> None:
        if self.journal is not None:
            self.journal.setdefault(key, self._entries.get(key))
        self._entries[key] = (deadline_ms, payload)
        queued = self._queued_at.get(key)
        if queued is None or deadline_ms < queued:
            self._push(key, deadline_ms)

    def cancel(self, key: K) -> None:
        if self.journal is not None:
            self.journal.setdefault(key, self._entries.get(key))
        self._entries.pop(key, None)

    def restore(self, key: K, entry: tuple[int, P] | None) -> None:
        """Put back an entry ``journal`` recorded."""
        if entry is None:
            self.cancel(key)
        else:
            self.schedule(key, *entry)

    def clear(self) -> None:
        self._entries.clear()
        self._heap.clear()
        self._queued_at.clear()

    def get(self, key: K) -> tuple[int, P] | None:
        return self._entries.get(key)

    def next_deadline(self) -> int | None:
        self._settle_top()
        return self._heap[0][0] if self._heap else None

    def nothing_due_before(self, ms: int) -> bool:
        """Whether no entry is due before ``ms``, without cleaning up: the heap's
        top is never later than the next deadline (it may be earlier)."""
        heap = self._heap
        return not heap or heap[0][0] >= ms

    def pop_due(self, now_ms: int) -> tuple[K, P] | None:
        """The earliest entry due at ``now_ms``, removed; None if none is due."""
        self._settle_top()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        del self._queued_at[key]
        if self.journal is not None and key not in self.journal:
            self.journal[key] = self._entries[key]
        _, payload = self._entries.pop(key)
        return key, payload

    def _push(self, key: K, deadline_ms: int) -> None:
        self._sequence += 1
        heapq.heappush(self._heap, (deadline_ms, self._sequence, key))
        self._queued_at[key] = deadline_ms

    def _settle_top(self) -> None:
        """Drop or re-queue stale heap entries until the top is a live deadline."""
        heap = self._heap
        while heap:
            deadline, _, key = heap[0]
            if self._queued_at.get(key) != deadline:
                heapq.heappop(heap)  # a duplicate superseded by an earlier push
                continue
            entry = self._entries.get(key)
            if entry is None:
                heapq.heappop(heap)
                del self._queued_at[key]
                continue
            if entry[0] > deadline:
                heapq.heappop(heap)
                self._push(key, entry[0])
                continue
            return
