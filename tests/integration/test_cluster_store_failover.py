"""The store itself fails over: three brokers on PostgreSQL under Patroni
(synchronous replication, a primary and its synchronous standby, on etcd),
reached by libpq's multi-host URL. The primary's PostgreSQL is killed with
SIGKILL while an idempotent producer produces and a committer commits offsets
through the brokers; Patroni promotes the standby.

Nothing acknowledged is lost (every commit the brokers acknowledged was on
the standby too), nothing is written twice, and the clients resume within
Patroni's failover plus the brokers' session timeout.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_brokers import (
    SESSION_MS,
    create_topic,
    fetch_records,
    leaders,
    produce,
    running_cluster,
    wait_for,
)

from kgroups.errors import ErrorCode
from kgroups.postgres_store.local_patroni import LocalPatroni, available

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))

PARTITIONS = 3
GROUP = "committer"
# Client backoffs and metadata refreshes on top of the failover and the session
# timeout, generous for a shared machine.
SLACK_S = 10.0


@pytest.fixture
def ha_store() -> Iterator[LocalPatroni]:
    with LocalPatroni(fsync=False) as store:  # kill -9 of a process keeps the page cache
        yield store


class Load:
    """An idempotent producer and a committer, each on a thread of its own,
    recording what was acknowledged and when."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.acked: list[tuple[int, int, bytes, float, float]] = []  # p, offset, value, sent, acked
        self.failed: list[str] = []
        self.commits: list[tuple[int, float, float]] = []  # offset, started, acknowledged
        self.commit_errors = 0
        self._threads = [
            threading.Thread(target=self._produce, daemon=True),
            threading.Thread(target=self._commit, daemon=True),
        ]

    def __enter__(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self._threads:
            t.join(90)

    def _produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 2,
                "message.timeout.ms": 120000,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )

        def report(sent: float) -> Any:
            def done(error: Any, message: Any) -> None:
                if error is not None:
                    self.failed.append(str(error))
                else:
                    self.acked.append(
                        (message.partition(), message.offset(), message.value(), sent, now())
                    )

            return done

        i = 0
        while not self.stop.is_set():
            value = f"v{i}".encode()
            producer.produce("t", value, partition=i % PARTITIONS, on_delivery=report(now()))
            i += 1
            producer.poll(0.002)
        assert producer.flush(100) == 0

    def _commit(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": GROUP, "enable.auto.commit": False}
        )
        offset = 0
        try:
            while not self.stop.is_set():
                offset += 1
                started = now()
                try:
                    consumer.commit(
                        offsets=[TopicPartition("t", p, offset) for p in range(PARTITIONS)],
                        asynchronous=False,
                    )
                except KafkaException:
                    self.commit_errors += 1
                    time.sleep(0.05)
                    continue
                self.commits.append((offset, started, now()))
                time.sleep(0.01)
        finally:
            consumer.close()


def now() -> float:
    return time.monotonic()


def _log(ports: dict[int, int], partition: int) -> dict[int, bytes]:
    """The partition's records by offset, read from its leader (looked up
    again while leadership still settles after the failover)."""
    values: dict[int, bytes] = {}
    while True:
        records = _fetch_from_leader(ports, partition, max(values, default=-1) + 1)
        if not records:
            return values
        values.update(records)


def _fetch_from_leader(
    ports: dict[int, int], partition: int, offset: int
) -> list[tuple[int, bytes]]:
    records: list[tuple[int, bytes]] = []

    def fetched() -> bool:
        leader = leaders(next(iter(ports.values())), "t")[partition]
        error, found = fetch_records(ports[leader], "t", partition, offset)
        records[:] = found
        return error == ErrorCode.none

    wait_for(fetched, 30)
    return records


def test_killing_the_primary_under_load_loses_nothing_and_clients_resume(
    tmp_path: Path, ha_store: LocalPatroni
) -> None:
    url = ha_store.create_database("kgroups")
    with running_cluster(tmp_path, url, 3) as brokers:
        bootstrap = ",".join(b.bootstrap for b in brokers)
        assert create_topic(brokers[0].port, "t", PARTITIONS) == ErrorCode.none
        leaders(brokers[0].port, "t")
        with Load(bootstrap) as load:
            wait_for(lambda: len(load.acked) >= 300 and len(load.commits) >= 20, 30)
            killed = now()
            failover = ha_store.failover()  # SIGKILL of the primary's postmaster

            def resumed() -> bool:
                produced = any(sent > killed for *_, sent, _at in load.acked)
                committed = any(started > killed for _o, started, _at in load.commits)
                return produced and committed

            wait_for(resumed, failover + SESSION_MS / 1000 + 60)
            produce_resumed = min(at for *_, sent, at in load.acked if sent > killed) - killed
            commit_resumed = min(at for _o, start, at in load.commits if start > killed) - killed
            acked_at_resume = len(load.acked)
            wait_for(lambda: len(load.acked) >= acked_at_resume + 300, 30)
        print(
            f"failover {failover:.2f} s; produce resumed after {produce_resumed:.2f} s, "
            f"commits after {commit_resumed:.2f} s (session timeout {SESSION_MS / 1000:.1f} s)"
        )
        bound = failover + SESSION_MS / 1000 + SLACK_S
        assert produce_resumed < bound and commit_resumed < bound
        assert load.failed == []

        # Every acknowledged record is where its acknowledgement said; none twice.
        ports = {i + 1: b.port for i, b in enumerate(brokers)}
        logs = {p: _log(ports, p) for p in range(PARTITIONS)}
        for partition, offset, value, _sent, _at in load.acked:
            assert logs[partition][offset] == value, (partition, offset)
        twice = [
            v for v, n in Counter(v for log in logs.values() for v in log.values()).items() if n > 1
        ]
        assert twice == []
        # The last acknowledged commit, or a later one, is what the group has.
        from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
        found: list[Any] = []

        def read_committed() -> bool:
            # The group's coordinator may move once more as the brokers' leases
            # settle after the failover: NOT_COORDINATOR is asked again.
            try:
                found[:] = consumer.committed(
                    [TopicPartition("t", p) for p in range(PARTITIONS)], timeout=20
                )
            except KafkaException as e:
                if e.args[0].code() != KafkaError.NOT_COORDINATOR:
                    raise
                return False
            return True

        try:
            wait_for(read_committed, 30)
        finally:
            consumer.close()
        committed = found
        last = load.commits[-1][0]
        assert all(last <= tp.offset <= last + 1 for tp in committed), (last, committed)


def _store_rows(url: str) -> tuple[dict[int, int], dict[int, int], dict[int, float]]:
    """Read from the current primary: each broker's lease epoch, each partition's
    leader epoch, and how long each broker's lease has left on its clock (s)."""
    import psycopg

    with psycopg.connect(url, connect_timeout=5) as conn:
        brokers = conn.execute(
            """SELECT broker_id, lease_epoch,
                   EXTRACT(EPOCH FROM lease_expires_at - clock_timestamp())
               FROM kgroups_brokers"""
        ).fetchall()
        partitions = conn.execute(
            """SELECT p.partition, p.leader_epoch FROM kgroups_partitions p
               JOIN kgroups_topics t ON t.topic_id = p.topic_id WHERE t.name = 't'"""
        ).fetchall()
    return (
        {int(b): int(e) for b, e, _left in brokers},
        {int(p): int(e) for p, e in partitions},
        {int(b): float(left) for b, _e, left in brokers},
    )


def test_leases_go_on_under_the_new_primary_and_run_out_on_its_clock(
    tmp_path: Path, ha_store: LocalPatroni
) -> None:
    """A failover shorter than the session timeout: every lease the old primary
    granted and a broker trusted was on the standby (synchronous commit), so
    the brokers renew them on the new primary, keep their lease epochs and
    their partitions, and no leader epoch moves. A broker killed afterwards
    loses its partitions once its lease ran out on the new primary's clock,
    never sooner."""
    url = ha_store.create_database("kgroups")
    session_ms = 8000  # longer than the failover
    with running_cluster(tmp_path, url, 3, f"broker.session.timeout.ms={session_ms}") as brokers:
        ports = {i + 1: b.port for i, b in enumerate(brokers)}
        assert create_topic(ports[1], "t", PARTITIONS) == ErrorCode.none
        wait_for(lambda: set(leaders(ports[1], "t").values()) == {1, 2, 3})
        before = leaders(ports[1], "t")
        lease_epochs, leader_epochs, _left = _store_rows(url)

        killed = now()
        failover = ha_store.failover()
        assert failover < session_ms / 1000 - 2, "the failover outlasted the leases"

        # Each partition takes writes again at the leader it had.
        for partition, leader in before.items():
            wait_for(lambda p=partition, b=leader: produce(ports[b], "t", p, b"x")[0] == 0, 30)
        resumed = now() - killed
        # Renewed on the new primary: each lease soon runs a session timeout
        # from a renewal made there.
        wait_for(lambda: all(s > session_ms / 1000 - 2 for s in _store_rows(url)[2].values()), 20)
        after_epochs, after_leaders, _left = _store_rows(url)
        assert after_epochs == lease_epochs  # renewed, not registered again
        assert after_leaders == leader_epochs  # no partition moved
        assert leaders(ports[1], "t") == before
        print(f"failover {failover:.2f} s; writes at the same leaders after {resumed:.2f} s")

        # A broker killed now: its partitions move once its lease ran out on
        # the new primary's clock, as that primary granted it, never sooner.
        victim = before[0]
        read_at = now()
        lease_left = _store_rows(url)[2][victim]
        brokers[victim - 1].kill()
        survivor = next(b for b in ports if b != victim)
        wait_for(
            lambda: victim not in leaders(ports[survivor], "t").values(), session_ms / 1000 + 20
        )
        moved = now() - read_at
        print(f"the lease had {lease_left:.2f} s left; its partitions moved after {moved:.2f} s")
        assert lease_left < moved < lease_left + 3
