"""Which optional fields a ConsumerGroupHeartbeat carries (KIP-848).

The coordinator remembers what a member told it, so a member sends a field only
when it differs from what it last sent: every field when joining (epoch 0),
then only what changed -- a new subscription, or the partitions it owns once it
has reconciled a new assignment (which is how it acknowledges it). After an
error or a lost request nothing is known to have arrived, so the next
heartbeat starts over with every field (the Java client's SentFields).
"""

from __future__ import annotations

import uuid

__all__ = ["OwnedPartitions", "SentFields"]

OwnedPartitions = frozenset[tuple[uuid.UUID, int]]
"""Partitions by topic id, as the coordinator names them."""


_NOTHING = object()


class SentFields:
    def __init__(self) -> None:
        self._sent: dict[str, object] = {}

    def reset(self) -> None:
        """Nothing is known to have reached the coordinator."""
        self._sent.clear()

    def changed(self, name: str, value: object, send_all: bool) -> bool:
        """Whether to send ``value`` for field ``name``; if so it counts as sent."""
        if send_all or self._sent.get(name, _NOTHING) != value:
            self._sent[name] = value
            return True
        return False
