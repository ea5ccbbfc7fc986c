"""Brokers in cluster mode (`cluster.store.url`): real `kgroups serve` processes
sharing one PostgreSQL database, seen through the wire."""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
from cluster_brokers import (
    SESSION_MS,
    cluster_broker,
    create_topic,
    fetch,
    leaders,
    metadata,
    produce,
    running_cluster,
    wait_for,
)
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import ProducerId, i16

from raw_wire import call_once

if TYPE_CHECKING:
    from kgroups.postgres_store.local_server import LocalPostgres

    from process_broker import BrokerProcess


def _shared_cluster(
    factory: pytest.TempPathFactory, server: LocalPostgres, count: int
) -> Iterator[list[BrokerProcess]]:
    from postgres import fresh_database

    with running_cluster(factory.mktemp(f"cluster{count}"), fresh_database(server), count) as b:
        yield b


# The tests that only create topics of their own and read and write them share
# a cluster; those that kill, pause or cut a broker start their own.
@pytest.fixture(scope="module")
def two_brokers(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: LocalPostgres
) -> Iterator[list[BrokerProcess]]:
    yield from _shared_cluster(tmp_path_factory, postgres_server, 2)


@pytest.fixture(scope="module")
def three_brokers(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: LocalPostgres
) -> Iterator[list[BrokerProcess]]:
    yield from _shared_cluster(tmp_path_factory, postgres_server, 3)


def test_a_topic_created_through_one_broker_is_seen_by_every_broker(
    two_brokers: list[BrokerProcess],
) -> None:
    a, b = two_brokers
    assert create_topic(a.port, "spread", 4) == ErrorCode.none
    by_a = leaders(a.port, "spread")
    wait_for(lambda: Counter(leaders(b.port, "spread").values()) == Counter({1: 2, 2: 2}))
    seen_a = metadata(a.port, "spread")
    seen_b = metadata(b.port, "spread")
    assert seen_a.topics[0].topic_id == seen_b.topics[0].topic_id
    assert seen_a.topics[0].topic_id.int != 0
    assert sorted(x.node_id for x in seen_b.brokers) == [1, 2]
    assert {x.node_id: x.port for x in seen_a.brokers} == {1: a.port, 2: b.port}
    assert set(by_a) == {0, 1, 2, 3}
    # A second creation through the other broker is refused.
    assert create_topic(b.port, "spread", 1) == ErrorCode.topic_already_exists


def test_only_the_leader_takes_writes_and_reads_of_a_partition(
    two_brokers: list[BrokerProcess],
) -> None:
    brokers = two_brokers
    ports = {1: brokers[0].port, 2: brokers[1].port}
    assert create_topic(ports[1], "t", 2) == ErrorCode.none
    wait_for(lambda: set(leaders(ports[1], "t").values()) == {1, 2})
    wait_for(lambda: leaders(ports[2], "t") == leaders(ports[1], "t"))
    for partition, leader in leaders(ports[1], "t").items():
        other = ports[3 - leader]
        # A stale view may still be catching up: the leader answers once it knows.
        port = ports[leader]
        wait_for(lambda p=partition, at=port: produce(at, "t", p, b"x")[0] == ErrorCode.none)
        assert produce(other, "t", partition, b"y")[0] == ErrorCode.not_leader_or_follower
        assert fetch(other, "t", partition, 0)[0] == ErrorCode.not_leader_or_follower
        error, base = produce(ports[leader], "t", partition, b"a", b"b")
        assert error == ErrorCode.none
        assert fetch(ports[leader], "t", partition, base) == (ErrorCode.none, [b"a", b"b"])


def test_confluent_kafka_produces_and_consumes_across_three_brokers(
    three_brokers: list[BrokerProcess],
) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    brokers = three_brokers
    bootstrap = brokers[0].bootstrap  # one broker; the others come from Metadata
    assert create_topic(brokers[0].port, "ck", 3) == ErrorCode.none
    wait_for(lambda: set(leaders(brokers[0].port, "ck").values()) == {1, 2, 3})
    failed: list[object] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    sent = [f"v{i}".encode() for i in range(300)]
    for i, value in enumerate(sent):
        producer.produce(
            "ck", value, partition=i % 3, on_delivery=lambda e, _m: e and failed.append(e)
        )
    assert producer.flush(20) == 0
    assert failed == []
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "ck", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("ck", p, OFFSET_BEGINNING) for p in range(3)])
    got: list[bytes] = []
    wait_for(lambda: _poll_into(consumer, got) and len(got) >= len(sent), timeout=20)
    consumer.close()
    assert sorted(got) == sorted(sent)


def _poll_into(consumer: object, got: list[bytes]) -> bool:
    for message in consumer.consume(500, 0.2):  # type: ignore[attr-defined]
        assert message.error() is None, message.error()
        got.append(message.value())
    return True


def test_kafka_python_produces_and_consumes_in_a_group_across_three_brokers(
    three_brokers: list[BrokerProcess],
) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    brokers = three_brokers
    bootstrap = brokers[1].bootstrap
    assert create_topic(brokers[1].port, "kp", 3) == ErrorCode.none
    wait_for(lambda: set(leaders(brokers[1].port, "kp").values()) == {1, 2, 3})
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    sent = [f"v{i}".encode() for i in range(150)]
    futures = [producer.send("kp", v, partition=i % 3) for i, v in enumerate(sent)]
    producer.flush(20)
    assert {f.get(10).partition for f in futures} == {0, 1, 2}
    producer.close()
    # A consumer group: its coordinator is whichever broker leads its
    # offsets partition, found through FindCoordinator.
    consumer = KafkaConsumer(
        "kp",
        bootstrap_servers=bootstrap,
        group_id="kp-group",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=2000,
    )
    got: list[bytes] = []
    wait_for(lambda: got.extend(m.value for m in consumer) or len(got) >= len(sent), 20)
    consumer.commit()
    committed = {p: consumer.committed(TopicPartition("kp", p)) for p in range(3)}
    consumer.close()
    assert sorted(got) == sorted(sent)
    assert sum(committed.values()) == len(sent)


def test_kill_9_of_a_leader_moves_its_partitions_and_loses_no_acknowledged_record(
    tmp_path: Path, store_url: str
) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    with running_cluster(tmp_path, store_url, 3) as brokers:
        assert create_topic(brokers[0].port, "kill", 3) == ErrorCode.none
        wait_for(lambda: set(leaders(brokers[0].port, "kill").values()) == {1, 2, 3})
        victim = leaders(brokers[0].port, "kill")[0]
        survivor = next(b for i, b in enumerate(brokers, 1) if i != victim)
        acked: list[bytes] = []
        producer = Producer(
            {
                "bootstrap.servers": ",".join(b.bootstrap for b in brokers),
                "acks": "all",
                "linger.ms": 5,
            }
        )

        def delivered(error: object, message: object) -> None:
            if error is None:
                acked.append(message.value())  # type: ignore[attr-defined]

        deadline = time.monotonic() + SESSION_MS / 1000 + 5
        killed_at = time.monotonic() + 1
        i = 0
        while time.monotonic() < deadline:
            if killed_at and time.monotonic() >= killed_at:
                brokers[victim - 1].kill()
                killed_at = 0
            producer.produce("kill", f"v{i}".encode(), partition=i % 3, on_delivery=delivered)
            producer.poll(0.002)
            i += 1
        producer.flush(20)
        # Another broker leads the victim's partitions, and took writes after the kill.
        moved = leaders(survivor.port, "kill")
        assert victim not in moved.values()
        assert any(int(v[1:]) % 3 == 0 for v in acked[-50:])
        consumer = Consumer(
            {"bootstrap.servers": survivor.bootstrap, "group.id": "k", "enable.auto.commit": False}
        )
        consumer.assign([TopicPartition("kill", p, OFFSET_BEGINNING) for p in range(3)])
        got: list[bytes] = []
        wanted = set(acked)
        wait_for(lambda: _poll_into(consumer, got) and wanted <= set(got), timeout=20)
        consumer.close()


def _store_reachable(store_url: str, reachable: bool) -> None:
    """Let the brokers reach the database or not: refuse and cut their connections."""
    database = store_url.rsplit("/", 1)[1]
    admin = store_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(reachable).lower()}')
        if not reachable:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (database,),
            )


def test_without_the_store_nothing_is_acknowledged_and_the_broker_recovers_by_itself(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 1) as (broker,):
        assert create_topic(broker.port, "t", 1) == ErrorCode.none
        leaders(broker.port, "t")
        wait_for(lambda: produce(broker.port, "t", 0, b"before")[0] == ErrorCode.none)
        _store_reachable(store_url, False)
        try:
            # Past the session timeout: the lease runs out meanwhile.
            deadline = time.monotonic() + SESSION_MS / 1000 + 1
            answers = set()
            while time.monotonic() < deadline:
                answers.add(produce(broker.port, "t", 0, b"during")[0])
                time.sleep(0.1)
            assert ErrorCode.none not in answers
            # REQUEST_TIMED_OUT: the store's answer lost, the write possibly made.
            assert answers <= {
                ErrorCode.request_timed_out,
                ErrorCode.kafka_storage_error,
                ErrorCode.not_leader_or_follower,
            }
        finally:
            _store_reachable(store_url, True)
        wait_for(lambda: produce(broker.port, "t", 0, b"after")[0] == ErrorCode.none, 20)
        error, values = fetch(broker.port, "t", 0, 0)
        assert error == ErrorCode.none
        assert b"during" not in values
        assert values[0] == b"before" and values[-1] == b"after"


def _producer_id(port: int) -> int:
    response = call_once(
        port,
        InitProducerIdRequest(
            transactional_id=None,
            transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
        ),
    )
    assert response.error_code == ErrorCode.none
    return int(response.producer_id)


def test_sigterm_hands_the_partitions_over_and_producer_ids_stay_unique(
    tmp_path: Path, store_url: str
) -> None:
    # A long lease, so that a move within it can only be the controlled one
    # (a busy machine may take seconds for it).
    session_ms = 20_000
    with running_cluster(tmp_path, store_url, 2, f"broker.session.timeout.ms={session_ms}") as (
        a,
        b,
    ):
        # Idempotent producers of different brokers never share an id.
        ids = {_producer_id(a.port), _producer_id(b.port), _producer_id(a.port)}
        assert len(ids) == 3
        assert create_topic(a.port, "t", 4) == ErrorCode.none
        wait_for(lambda: set(leaders(a.port, "t").values()) == {1, 2})
        started = time.monotonic()
        assert b.terminate() == 0
        wait_for(lambda: set(leaders(a.port, "t").values()) == {1}, timeout=session_ms / 1000)
        # A controlled move, not a session timeout.
        assert time.monotonic() - started < session_ms / 1000
        wait_for(lambda: produce(a.port, "t", 0, b"x")[0] == ErrorCode.none)


def test_a_paused_leader_acknowledges_nothing_once_its_lease_is_gone(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 2) as (a, b):
        assert create_topic(a.port, "t", 2) == ErrorCode.none
        wait_for(lambda: set(leaders(a.port, "t").values()) == {1, 2})
        partition = next(p for p, leader in leaders(a.port, "t").items() if leader == 2)
        wait_for(lambda: produce(b.port, "t", partition, b"before")[0] == ErrorCode.none)
        assert b.proc is not None
        b.proc.send_signal(signal.SIGSTOP)
        try:
            # A produce waits in the paused broker's socket; A takes the partition over.
            with ThreadPoolExecutor(1) as pool:
                late = pool.submit(produce, b.port, "t", partition, b"late")
                wait_for(
                    lambda: leaders(a.port, "t")[partition] == 1, timeout=SESSION_MS / 1000 + 10
                )
                wait_for(lambda: produce(a.port, "t", partition, b"new")[0] == ErrorCode.none)
                b.proc.send_signal(signal.SIGCONT)
                assert late.result(20)[0] in (
                    ErrorCode.not_leader_or_follower,
                    ErrorCode.kafka_storage_error,
                    ErrorCode.request_timed_out,  # its store connection found closed
                )
        finally:
            b.proc.send_signal(signal.SIGCONT)
        error, values = fetch(a.port, "t", partition, 0)
        assert (error, values) == (ErrorCode.none, [b"before", b"new"])


def test_a_broker_lists_itself_in_metadata_from_its_first_connection(
    tmp_path: Path, store_url: str
) -> None:
    """Clients connect as soon as the port accepts: the broker must know the
    cluster by then (librdkafka's admin waits a metadata refresh for a
    controller missing from the broker list)."""
    broker = cluster_broker(tmp_path, store_url, 1)
    try:
        broker.start()
        answer = metadata(broker.port)
        assert [b.node_id for b in answer.brokers] == [1]
        assert answer.controller_id == 1
    finally:
        broker.stop()
