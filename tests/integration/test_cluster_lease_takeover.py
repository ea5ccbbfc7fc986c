"""Lease takeover and fencing on virtual time, against a real PostgreSQL.

One ManualClock drives both brokers' lease state machines and the store's
clock (each store handle shifted by the virtual time elapsed), so nothing
sleeps. The store's clock also runs in real time underneath: the margins below
(seconds) are far wider than the real time the test takes (milliseconds).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kgroups.clock import ManualClock
from kgroups.cluster.broker_leases import register, renew
from kgroups.cluster.leadership import elect_leaders, partition_leaders, surplus
from kgroups.cluster.lease_state import LeaderView, LeaseState
from kgroups.postgres_store.appends import append
from kgroups.postgres_store.errors import LeaseExpired, NotLeader
from kgroups.postgres_store.fencing import Writer
from kgroups.postgres_store.reads import read
from kgroups.postgres_store.schema import ensure_schema
from kgroups.postgres_store.store import Store
from kgroups.postgres_store.topics import create_topic
from kgroups.records.batch import decode_records, encode_batch, read_header

HEARTBEAT_MS = 2000
SESSION_MS = 30_000
MARGIN_MS = 5000  # also the real time the test may take between two virtual steps


class Broker:
    """A broker reduced to its lease: a store handle and its state machine."""

    def __init__(self, broker_id: int, url: str, clock: ManualClock) -> None:
        self.id = broker_id
        self.clock = clock
        self.start = clock.now_ms()
        self.store = Store.connect(url)
        self.state = LeaseState(
            broker_id,
            clock,
            heartbeat_interval_ms=HEARTBEAT_MS,
            session_timeout_ms=SESSION_MS,
            margin_ms=MARGIN_MS,
        )

    def sync(self) -> Store:
        self.store.time_shift_ms = self.clock.now_ms() - self.start
        return self.store

    def register(self) -> None:
        sent = self.clock.now_ms()
        epoch = register(
            self.sync(),
            self.id,
            f"PLAINTEXT://127.0.0.1:{9000 + self.id}",
            SESSION_MS,
            incarnation=uuid.uuid4(),
        )
        self.state.registered(epoch, sent)

    def renew(self) -> None:
        assert self.state.lease_epoch is not None
        sent = self.state.renew_sent()
        try:
            renew(self.sync(), self.id, self.state.lease_epoch, SESSION_MS)
        except LeaseExpired:
            self.state.lease_lost()
            raise
        self.state.renewed(sent)

    def observe(self) -> None:
        views = [
            LeaderView(p.topic, p.partition, p.leader_id, p.leader_lease_epoch, p.leader_epoch)
            for p in partition_leaders(self.sync())
        ]
        self.state.observe(views)

    def writer(self) -> Writer:
        assert self.state.lease_epoch is not None
        return Writer(self.id, self.state.lease_epoch)

    def produce(self, partition: int, value: bytes) -> int:
        epoch = self.state.leader_epoch("t", partition)
        if epoch is None:
            raise NotLeader("t", partition, None, -1)
        batch = encode_batch([(None, value, (), 0)])
        return append(self.sync(), self.writer(), "t", partition, epoch, [batch]).base_offset


@pytest.fixture
def brokers(store_url: str) -> Iterator[tuple[Broker, Broker]]:
    clock = ManualClock()
    a, b = Broker(1, store_url, clock), Broker(2, store_url, clock)
    ensure_schema(a.store)
    create_topic(a.store, "t", 2)
    try:
        yield a, b
    finally:
        a.store.close()
        b.store.close()


def advance(clock: ManualClock, ms: int, *renewing: Broker) -> None:
    """Let ``ms`` of virtual time pass, the ``renewing`` brokers renewing on time."""
    end = clock.now_ms() + ms
    while clock.now_ms() < end:
        clock.advance(min(HEARTBEAT_MS, end - clock.now_ms()))
        for broker in renewing:
            if broker.state.renew_due():
                broker.renew()


def test_a_paused_leader_is_taken_over_and_fenced(brokers: tuple[Broker, Broker]) -> None:
    a, b = brokers
    clock = a.clock
    a.register()
    b.register()
    elect_leaders(b.sync())
    a.observe()
    b.observe()
    [pa] = a.state.leading()
    [pb] = b.state.leading()
    stale_epoch = a.state.leading()[pa]
    assert a.produce(pa[1], b"a1") == 0

    # A pauses: no renewals. It stops writing on its own, before the store
    # would let anyone take its partition over.
    advance(clock, SESSION_MS - MARGIN_MS - 1, b)
    assert a.state.may_write()
    advance(clock, 1, b)
    assert not a.state.may_write()
    with pytest.raises(NotLeader):
        a.produce(pa[1], b"refused by a itself")
    assert elect_leaders(b.sync()) == []  # A's lease still stands in the store

    # Past the session timeout: the store refuses A even if A tries anyway
    # (a request that was in flight when it paused).
    advance(clock, MARGIN_MS + MARGIN_MS, b)
    assert a.state.leading() == {}  # A leads nothing it could vouch for
    with pytest.raises(LeaseExpired):
        append(a.sync(), a.writer(), "t", pa[1], stale_epoch, [encode_batch([(None, b"x", (), 0)])])

    # B takes the partition over under a new leader epoch and carries on the log.
    [moved] = elect_leaders(b.sync())
    assert (moved.partition, moved.leader_id, moved.leader_epoch) == (pa[1], 2, stale_epoch + 1)
    b.observe()
    assert set(b.state.leading()) == {pa, pb}
    assert b.produce(pa[1], b"b1") == 1

    # A resumes: its renewal fails, it drops everything and registers anew.
    with pytest.raises(LeaseExpired):
        a.renew()
    assert a.state.leading() == {} and not a.state.may_write()
    a.register()
    a.observe()
    assert a.state.leading() == {}
    with pytest.raises(NotLeader):
        append(a.sync(), a.writer(), "t", pa[1], stale_epoch, [encode_batch([(None, b"y", (), 0)])])

    # Leadership is spread again: A gets one partition back, at a newer epoch.
    elect_leaders(b.sync(), giver=2, give_away=surplus(b.sync(), 2))
    a.observe()
    b.observe()
    [back] = a.state.leading()
    assert a.state.leading()[back] > stale_epoch and len(b.state.leading()) == 1
    a.produce(back[1], b"a2")

    # Every acknowledged write is in the log, once, in order of leader epoch.
    batches = read(a.sync(), "t", pa[1], 0, 1 << 20).batches
    got = [(r.offset, r.value) for batch in batches for r in decode_records(batch)]
    epochs = [read_header(batch).partition_leader_epoch for batch in batches]
    assert epochs == sorted(epochs)
    assert got[:2] == [(0, b"a1"), (1, b"b1")]
