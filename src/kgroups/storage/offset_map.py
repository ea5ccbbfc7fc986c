"""The cleaner's key -> latest offset map over the dirty part of a log.

Kafka's cleaner hashes keys into a fixed buffer (``log.cleaner.dedupe.buffer.size``)
and stops reading the dirty part once the buffer is full, cleaning only up to the
last offset it mapped; the rest waits for the next round. This map keeps the keys
themselves (no collisions to reason about) and bounds the number of entries
instead of bytes, with the same stopping rule.
"""

from __future__ import annotations

__all__ = ["OffsetMap"]


class OffsetMap:
    __slots__ = ("_offsets", "capacity", "latest_offset")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"an offset map needs room for at least one key, not {capacity}")
        self.capacity = capacity
        self._offsets: dict[bytes, int] = {}
        # Every offset up to here has been mapped; records beyond it are kept as is.
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._offsets)

    def has_room_for(self, records: int) -> bool:
        """Whether ``records`` more keys surely fit (an empty map always accepts:
        a round that maps nothing would never make progress)."""
        return not self._offsets or len(self._offsets) + records <= self.capacity

    def put(self, key: bytes, offset: int) -> None:
        self._offsets[key] = offset

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``, or -1 if the dirty part never wrote it."""
        return self._offsets.get(key, -1)

    @property
    def offsets(self) -> dict[bytes, int]:
        """The mapping itself, for loops that cannot afford a method call per record."""
        return self._offsets
