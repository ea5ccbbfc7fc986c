"""Injected time: everything that reads the clock takes a ``Clock``."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds since the epoch."""
        ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """Virtual time for tests: it moves only when told to."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self._now_ms = now_ms

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, ms: int) -> None:
        self._now_ms += ms


class MonotonicClock:
    """Milliseconds that only move forward (not wall-clock time): for leases,
    which must not stretch when the system clock is set back."""

    def now_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000
