"""The broker's quotas at run time: the table of quotas set, the rates of the
clients they bound, and what throttling has cost each client.

Each quota key has its own rates (Kafka's Produce, Fetch and Request quota
managers, and the connection rate per address), keyed by whose rate the
winning entity measures (precedence.py). A rate records first and is then
checked, as Kafka's sensors do: the request that goes over is served, and the
throttle time makes up for it. Rates and throttle counts idle for an hour are
forgotten, as Kafka's sensors expire, so client ids that come and go cost
nothing lasting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kgroups.clock import Clock
from kgroups.quotas.entities import CONNECTION_CREATION_RATE, REQUEST_PERCENTAGE, Entity
from kgroups.quotas.precedence import QuotaTable
from kgroups.quotas.rate import WindowedRate, throttle_ms

__all__ = ["ClientQuotas", "ThrottleStats"]

_FORGET_AFTER_MS = 3_600_000  # Kafka's inactive sensor expiry


@dataclass(slots=True)
class ThrottleStats:
    """Throttle times given to one (quota key, user, client id)."""

    count: int = 0
    total_ms: int = 0
    last_ms: int = 0
    """When it was last given (an hour later, it is forgotten)."""


@dataclass(slots=True)
class _Tracked:
    rate: WindowedRate
    last_used_ms: int


@dataclass(slots=True)
class ClientQuotas:
    clock: Clock
    window_num: int = 11
    window_ms: int = 1000
    table: QuotaTable = field(default_factory=lambda: QuotaTable({}))
    throttles: dict[tuple[str, str, str], ThrottleStats] = field(default_factory=dict)
    _rates: dict[tuple[str, str, str], _Tracked] = field(default_factory=dict)
    _next_sweep_ms: int = 0

    def replace(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        """Take the quotas as they are now set (rates measured so far stay)."""
        self.table = QuotaTable(quotas)

    def sets(self, key: str) -> bool:
        return self.table.sets(key)

    def record(self, key: str, user: str, client_id: str, value: float) -> int:
        """Add ``value`` to the client's rate for ``key``; the throttle time in ms."""
        match = self.table.client_quota(key, user, client_id)
        if match is None:
            return 0
        now = self.clock.now_ms()
        rate = self._rate((key, *match.measured), now)
        rate.record(value, now)
        wait = throttle_ms(rate, match.bound, now)
        # As Kafka's request quota manager: request time throttles one window at most.
        return min(wait, self.window_ms) if key == REQUEST_PERCENTAGE else wait

    def unrecord(self, key: str, user: str, client_id: str, value: float) -> None:
        """Take back a recorded value (a fetch answered empty because throttled)."""
        match = self.table.client_quota(key, user, client_id)
        if match is not None:
            now = self.clock.now_ms()
            self._rate((key, *match.measured), now).record(-value, now)

    def most_in_window(self, key: str, user: str, client_id: str) -> float | None:
        """The most one request can take without being throttled for sure:
        the bound over the measured windows but one (None: no quota)."""
        match = self.table.client_quota(key, user, client_id)
        if match is None:
            return None
        return match.bound * (self.window_num - 1) * self.window_ms / 1000

    def connection(self, host: str) -> int:
        """Count a new connection from ``host``; the ms to hold it before
        closing it unserved when over the address's rate (0: serve it)."""
        bound = self.table.ip_quota(CONNECTION_CREATION_RATE, host)
        if bound is None:
            return 0
        now = self.clock.now_ms()
        rate = self._rate((CONNECTION_CREATION_RATE, host, ""), now)
        rate.record(1, now)
        wait = throttle_ms(rate, bound, now)
        if wait:
            rate.record(-1, now)  # refused: it does not count
        # As Kafka, a refused connection waits at most one window.
        return min(wait, self.window_ms)

    def throttled(self, key: str, user: str, client_id: str, ms: int) -> None:
        stats = self.throttles.get((key, user, client_id))
        if stats is None:
            stats = self.throttles[(key, user, client_id)] = ThrottleStats()
        stats.count += 1
        stats.total_ms += ms
        stats.last_ms = self.clock.now_ms()

    def _rate(self, which: tuple[str, str, str], now: int) -> WindowedRate:
        if now >= self._next_sweep_ms:
            self._sweep(now)
        tracked = self._rates.get(which)
        if tracked is None:
            tracked = _Tracked(WindowedRate(self.window_num, self.window_ms), now)
            self._rates[which] = tracked
        tracked.last_used_ms = now
        return tracked.rate

    def _sweep(self, now: int) -> None:
        self._next_sweep_ms = now + _FORGET_AFTER_MS // 60
        stale = [w for w, t in self._rates.items() if now - t.last_used_ms >= _FORGET_AFTER_MS]
        for which in stale:
            del self._rates[which]
        gone = [w for w, s in self.throttles.items() if now - s.last_ms >= _FORGET_AFTER_MS]
        for which in gone:
            del self.throttles[which]
