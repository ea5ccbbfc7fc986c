"""The three clocks a group member keeps (the Java client's Heartbeat).

- heartbeat: when the next heartbeat is due (every heartbeat.interval.ms, sooner
  after a failed one, so that a lost coordinator is noticed quickly);
- session: how long since the coordinator last answered; past session.timeout.ms
  the coordinator has surely dropped us, so it is looked up again;
- poll: how long since the application last called poll(); past
  max.poll.interval.ms the member leaves the group, because its partitions are
  better served by someone who is actually processing them.

Times are monotonic seconds; the caller supplies "now" so tests control it.
"""

from __future__ import annotations

__all__ = ["HeartbeatTimer"]


class HeartbeatTimer:
    def __init__(
        self,
        *,
        session_timeout_ms: int,
        heartbeat_interval_ms: int,
        max_poll_interval_ms: int,
        retry_backoff_ms: int,
        now: float,
    ) -> None:
        self.session_timeout = session_timeout_ms / 1000
        self.interval = heartbeat_interval_ms / 1000
        self.max_poll_interval = max_poll_interval_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self._next_heartbeat = now
        self._session_deadline = now + self.session_timeout
        self._poll_deadline = now + self.max_poll_interval
        self.in_flight = False

    def poll(self, now: float) -> None:
        self._poll_deadline = now + self.max_poll_interval

    def sent(self, now: float) -> None:
        self.in_flight = True
        self._next_heartbeat = now + self.interval

    def received(self, now: float) -> None:
        self.in_flight = False
        self._session_deadline = now + self.session_timeout

    def failed(self, now: float) -> None:
        self.in_flight = False
        self._next_heartbeat = now + self.retry_backoff

    def reset_session(self, now: float) -> None:
        self._session_deadline = now + self.session_timeout

    def reset(self, now: float) -> None:
        """A fresh start, as after joining: every clock starts over."""
        self.in_flight = False
        self._next_heartbeat = now + self.interval
        self._session_deadline = now + self.session_timeout
        self._poll_deadline = now + self.max_poll_interval

    def should_heartbeat(self, now: float) -> bool:
        return not self.in_flight and now >= self._next_heartbeat

    def time_to_next_heartbeat(self, now: float) -> float:
        return max(0.0, self._next_heartbeat - now)

    def session_expired(self, now: float) -> bool:
        return now >= self._session_deadline

    def poll_expired(self, now: float) -> bool:
        return now >= self._poll_deadline

    def time_to_poll_expiry(self, now: float) -> float:
        return max(0.0, self._poll_deadline - now)
