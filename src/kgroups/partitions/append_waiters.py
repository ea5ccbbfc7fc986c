"""Wake parked Fetch requests when data arrives on a partition they read."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable

TopicPartition = tuple[str, int]


class AppendWaiters:
    def __init__(self) -> None:
        self._waiters: defaultdict[TopicPartition, set[asyncio.Event]] = defaultdict(set)

    def register(self, partitions: Iterable[TopicPartition]) -> asyncio.Event:
        event = asyncio.Event()
        for tp in partitions:
            self._waiters[tp].add(event)
        return event

    def unregister(self, partitions: Iterable[TopicPartition], event: asyncio.Event) -> None:
        for tp in partitions:
            waiters = self._waiters.get(tp)
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    del self._waiters[tp]

    def notify(self, topic: str, partition: int) -> None:
        waiters = self._waiters.get((topic, partition))
        if waiters:
            for event in waiters:
                event.set()

    def wake_all(self) -> None:
        for waiters in self._waiters.values():
            for event in waiters:
                event.set()
