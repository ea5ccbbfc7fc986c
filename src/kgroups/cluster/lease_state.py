"""What a broker believes about its lease and the partitions it leads (sans-IO).

The store decides: a lease is live until ``broker.session.timeout.ms`` after
the store executed the last renewal, on the store's clock. The broker cannot
read that clock, but it knows when it *sent* each renewal on its own
(monotonic) clock, and the store executed it later. So it counts its lease as
valid until ``sent + session timeout - margin``: earlier than the store, by at
least the margin, however far apart the two clocks are set (only their rates
could differ, and the margin covers that many times over). After that instant
the broker writes nothing and answers as a broker that leads nothing, until a
renewal is acknowledged again or it learns the lease is gone and registers anew.

The store fences every write by itself (see ``fencing``); this local view is
what keeps a broker from acting on in-memory state (coordinator answers, cached
log ends) that another broker may already have taken over.

Nothing here does I/O: the broker tells it what was sent and what came back,
and asks it what to do and when.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kgroups.clock import Clock
from kgroups.partitions.home import LeadershipChange

DEFAULT_HEARTBEAT_INTERVAL_MS = 2000  # broker.heartbeat.interval.ms
DEFAULT_SESSION_TIMEOUT_MS = 9000  # broker.session.timeout.ms

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class LeaderView:
    """One partition's leader as read from the store."""

    topic: str
    partition: int
    leader_id: int | None
    leader_lease_epoch: int | None
    leader_epoch: int


class LeaseState:
    def __init__(
        self,
        broker_id: int,
        clock: Clock,
        *,
        heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        margin_ms: int | None = None,
    ) -> None:
        # The margin is half a heartbeat interval: a broker renewing on time
        # always has session - heartbeat - margin of validity in hand.
        margin = heartbeat_interval_ms // 2 if margin_ms is None else margin_ms
        if session_timeout_ms <= heartbeat_interval_ms + margin:
            raise ValueError(
                "broker.session.timeout.ms must exceed broker.heartbeat.interval.ms plus "
                "half of it (the margin a lease is trusted within)"
            )
        self.broker_id = broker_id
        self._clock = clock
        self._heartbeat_ms = heartbeat_interval_ms
        self._validity_ms = session_timeout_ms - margin
        self.lease_epoch: int | None = None
        self._valid_until = 0
        self._last_sent = 0
        self._leading: dict[TopicPartition, int] = {}

    # -- the lease -------------------------------------------------------------

    def registered(self, lease_epoch: int, sent_at_ms: int) -> None:
        """The store answered the registration sent at ``sent_at_ms``: a new
        incarnation, leading nothing yet."""
        self.lease_epoch = lease_epoch
        self._leading = {}
        self._last_sent = sent_at_ms
        self._valid_until = sent_at_ms + self._validity_ms

    def renew_due(self) -> bool:
        return self.lease_epoch is not None and self._clock.now_ms() >= self.next_renew_at_ms()

    def next_renew_at_ms(self) -> int:
        return self._last_sent + self._heartbeat_ms

    def renew_sent(self) -> int:
        """A renewal goes out now; pass the returned time to ``renewed``."""
        self._last_sent = self._clock.now_ms()
        return self._last_sent

    def renewed(self, sent_at_ms: int) -> None:
        self._valid_until = max(self._valid_until, sent_at_ms + self._validity_ms)

    def lease_lost(self) -> frozenset[TopicPartition]:
        """The store refused a renewal: the lease is gone for good. Returns the
        partitions this broker must stop leading; register again to rejoin."""
        lost = frozenset(self._leading)
        self.lease_epoch = None
        self._leading = {}
        self._valid_until = 0
        return lost

    def may_write(self) -> bool:
        return self.lease_epoch is not None and self._clock.now_ms() < self._valid_until

    def valid_until_ms(self) -> int:
        return self._valid_until

    def now_ms(self) -> int:
        """The lease's own clock (monotonic), which ``valid_until_ms`` is on."""
        return self._clock.now_ms()

    # -- leadership ------------------------------------------------------------

    def observe(self, leaders: Iterable[LeaderView]) -> LeadershipChange:
        """The partitions' leaders as just read from the store; returns what this
        broker gained (load those groups, rebuild those logs' state) and lost
        (drop them). Partitions led by an older incarnation of this broker.id
        are not this incarnation's."""
        now_leading = {
            (v.topic, v.partition): v.leader_epoch
            for v in leaders
            if v.leader_id == self.broker_id
            and v.leader_lease_epoch is not None
            and v.leader_lease_epoch == self.lease_epoch
        }
        gained = {tp: epoch for tp, epoch in now_leading.items() if self._leading.get(tp) != epoch}
        lost = frozenset(tp for tp, epoch in self._leading.items() if now_leading.get(tp) != epoch)
        self._leading = now_leading
        return LeadershipChange(gained, lost)

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        """The leader epoch to write ``topic``-``partition`` with, or None when
        this broker must answer NOT_LEADER_OR_FOLLOWER (not its partition, or
        its lease may have run out)."""
        if not self.may_write():
            return None
        return self._leading.get((topic, partition))

    def leading(self) -> dict[TopicPartition, int]:
        """The partitions this broker leads, by leader epoch: none while it
        cannot vouch for its lease (a view read before it ran out included)."""
        if not self.may_write():
            return {}
        return dict(self._leading)
