"""One call into a shard: the time it runs at and the Effects it collects.

The rules pass it along as one argument; whatever they answer or store goes
into ``fx``, and every deadline they set counts from ``now``.
"""

from __future__ import annotations

from kgroups.coordinator.effects import Effects


class Turn:
    __slots__ = ("fx", "now")

    def __init__(self, now: int, fx: Effects) -> None:
        self.now = now  # milliseconds since the epoch
        self.fx = fx
