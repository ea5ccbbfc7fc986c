"""Where a record without a key goes (the Java client's BuiltInPartitioner, KIP-794).

Spreading keyless records one by one over all partitions makes many small
batches. Instead all of them go to one partition until about ``batch.size``
bytes were sent there, then to another chosen at random among the partitions
whose leader is known -- so batches fill up, and over time the load is even.
Keyed records do not come here: they go where murmur2 of the key says, over
all partitions, so that a key always lands in the same place.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence

__all__ = ["StickyPartitioner"]


class StickyPartitioner:
    def __init__(self, batch_size: int, rng: random.Random | None = None) -> None:
        self.batch_size = max(batch_size, 1)
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._current: dict[str, tuple[int, int]] = {}  # topic -> (partition, bytes sent)

    def partition(self, topic: str, available: Sequence[int], partitions: int) -> int:
        """The sticky partition of ``topic`` now (``available``: partitions with a
        leader; may be empty, then any of the ``partitions``)."""
        with self._lock:
            current = self._current.get(topic)
            if current is not None and current[0] < partitions:
                return current[0]
            chosen = self._choose(available, partitions, None)
            self._current[topic] = (chosen, 0)
            return chosen

    def on_append(
        self, topic: str, partition: int, size: int, available: Sequence[int], partitions: int
    ) -> None:
        """Count bytes sent to the sticky partition; move on once a batch's worth went."""
        with self._lock:
            current = self._current.get(topic)
            if current is None or current[0] != partition:
                return
            sent = current[1] + size
            if sent >= self.batch_size:
                self._current[topic] = (self._choose(available, partitions, partition), 0)
            else:
                self._current[topic] = (partition, sent)

    def _choose(self, available: Sequence[int], partitions: int, previous: int | None) -> int:
        candidates = [p for p in available if p != previous] or list(available)
        if not candidates:
            candidates = [p for p in range(partitions) if p != previous] or [0]
        return self._rng.choice(candidates)
