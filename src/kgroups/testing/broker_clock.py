"""A virtual clock for thread brokers: `advance` moves the brokers' time and
wakes their coordinators, so deadlines passed by the jump act at once."""

from __future__ import annotations

from typing import Protocol

from kgroups.clock import ManualClock


class ClockedBroker(Protocol):
    """What the clock needs of a broker it drives (EmbeddedBroker)."""

    def clock_moved(self) -> None: ...


class BrokerClock(ManualClock):
    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        super().__init__(now_ms)
        self._brokers: list[ClockedBroker] = []

    def attach(self, broker: ClockedBroker) -> None:
        self._brokers.append(broker)

    def advance(self, ms: int) -> None:
        super().advance(ms)
        for broker in self._brokers:
            broker.clock_moved()
