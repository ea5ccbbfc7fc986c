"""A rate measured over sampled windows, and the throttle time that brings it
back under a bound: Kafka's Rate over a windowed sum, with its quirks.

Values are summed into samples of ``window_ms`` each; ``samples`` of them
(``quota.window.num``) make the measured window, one more is kept while the
oldest ages out. The rate divides the sum by the time the samples span, but
never by less than ``samples - 1`` whole windows, so a client's first burst is
not measured over a few milliseconds. A sample without events for the whole
window span is cleared.
"""

from __future__ import annotations

__all__ = ["WindowedRate", "throttle_ms"]

# Throttle times travel as int32 milliseconds.
MAX_THROTTLE_MS = 2**31 - 1


class _Sample:
    __slots__ = ("events", "last_event_ms", "start_ms", "value")

    def __init__(self, now_ms: int) -> None:
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.events = 0
        self.start_ms = now_ms
        self.last_event_ms = now_ms


class WindowedRate:
    __slots__ = ("_current", "_samples", "_window_ms", "_window_num")

    def __init__(self, window_num: int, window_ms: int) -> None:
        self._window_num = window_num
        self._window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self._window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.events += 1
        sample.last_event_ms = now_ms

    def per_second(self, now_ms: int) -> float:
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return total / (self.window_span_ms(now_ms) / 1000)

    def window_span_ms(self, now_ms: int) -> int:
        """The time the rate is measured over now."""
        self._purge(now_ms)
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        oldest = min(s.start_ms for s in self._samples)
        elapsed = now_ms - oldest
        whole = elapsed // self._window_ms
        at_least = self._window_num - 1
        if whole < at_least:
            elapsed += (at_least - whole) * self._window_ms
        return max(elapsed, 1)

    def idle_since(self, now_ms: int) -> bool:
        """No event within the measured window: nothing to remember."""
        span = self._window_num * self._window_ms
        return all(now_ms - s.last_event_ms >= span for s in self._samples)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # One sample more than measured: the oldest may still overlap the window.
        self._current = (self._current + 1) % (self._window_num + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: int) -> None:
        expire = self._window_num * self._window_ms
        for s in self._samples:
            if now_ms - s.last_event_ms >= expire:
                s.reset(now_ms)


def throttle_ms(rate: WindowedRate, bound: float, now_ms: int) -> int:
    """How long the client waits for ``rate`` to fall back to ``bound`` if it
    records nothing more (0 when within it), as Kafka's QuotaUtils computes it."""
    value = rate.per_second(now_ms)
    if value <= bound:
        return 0
    if bound <= 0:
        return MAX_THROTTLE_MS
    wait = (value - bound) / bound * rate.window_span_ms(now_ms)
    return min(round(wait), MAX_THROTTLE_MS)
