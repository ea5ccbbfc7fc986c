"""Cluster mode with two listeners: the registered one is the inter-broker listener's,
and each client still sees this broker at its own listener's address."""

import uuid
from pathlib import Path
from typing import Any

import psycopg
from cluster_brokers import (
    HEARTBEAT_MS,
    SESSION_MS,
    create_topic,
    leaders,
    metadata,
    wait_for,
)
from kio.schema.describe_cluster.v1 import DescribeClusterRequest
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest

from kgroups.cluster.broker_leases import register
from kgroups.errors import ErrorCode
from kgroups.postgres_store.store import Store
from kgroups.protocol.types import i8
from kgroups.testing.thread_broker import ThreadBroker

from process_broker import BrokerProcess, free_port
from raw_wire import call_once


def test_a_cluster_broker_answers_each_listener_with_its_own_address(
    tmp_path: Path, store_url: str
) -> None:
    internal, external = free_port(), free_port()
    broker = BrokerProcess(
        tmp_path / "b1",
        internal,
        f"cluster.store.url={store_url}",
        "broker.id=1",
        f"broker.heartbeat.interval.ms={HEARTBEAT_MS}",
        f"broker.session.timeout.ms={SESSION_MS}",
        f"listeners=INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
        "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        f"advertised.listeners=EXTERNAL://localhost:{external}",
        "inter.broker.listener.name=INTERNAL",
    ).start()
    try:
        seen = {
            port: [(b.node_id, b.host, b.port) for b in metadata(port).brokers]
            for port in (internal, external)
        }
        assert seen == {
            internal: [(1, "127.0.0.1", internal)],
            external: [(1, "localhost", external)],
        }
    finally:
        broker.stop()


def test_each_listener_sees_every_broker_at_that_listeners_address(
    tmp_path: Path, store_url: str
) -> None:
    """Two brokers, each with PLAINTEXT and INTERNAL: a client of either
    listener, on either broker, is told only that listener's ports."""
    ports = {b: {"PLAINTEXT": free_port(), "INTERNAL": free_port()} for b in (1, 2)}
    brokers = [
        cluster_broker(
            tmp_path,
            store_url,
            b,
            ports[b]["PLAINTEXT"],
            f"listeners=PLAINTEXT://127.0.0.1:{ports[b]['PLAINTEXT']},"
            f"INTERNAL://127.0.0.1:{ports[b]['INTERNAL']}",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
            f"advertised.listeners=INTERNAL://localhost:{ports[b]['INTERNAL']}",
            "inter.broker.listener.name=PLAINTEXT",
        )
        for b in (1, 2)
    ]
    hosts = {"PLAINTEXT": "127.0.0.1", "INTERNAL": "localhost"}
    try:
        for b in brokers:
            b.start()
        wait_for(lambda: len(metadata(ports[1]["PLAINTEXT"]).brokers) == 2)
        assert create_topic(ports[1]["PLAINTEXT"], "spread", 4) == ErrorCode.none
        leaders(ports[1]["PLAINTEXT"], "spread")
        for listener in ("PLAINTEXT", "INTERNAL"):
            expected = [(b, hosts[listener], ports[b][listener]) for b in (1, 2)]
            for b in (1, 2):
                port = ports[b][listener]
                seen = [(x.node_id, x.host, x.port) for x in metadata(port, "spread").brokers]
                assert seen == expected, (listener, b)
                described = call_once(
                    port, DescribeClusterRequest(include_cluster_authorized_operations=False)
                )
                assert [(x.broker_id, x.host, x.port) for x in described.brokers] == expected
                coordinators = find_coordinators(port, [f"g{i}" for i in range(20)])
                assert {c.node_id for c in coordinators} == {1, 2}
                for c in coordinators:
                    assert (c.host, c.port) == (hosts[listener], ports[c.node_id][listener])
    finally:
        for b in brokers:
            b.stop()


def cluster_broker(
    data: Path, store_url: str, broker_id: int, port: int, *overrides: str
) -> BrokerProcess:
    """A cluster broker whose first listener is on ``port``."""
    return BrokerProcess(
        data / f"b{broker_id}",
        port,
        f"cluster.store.url={store_url}",
        f"broker.id={broker_id}",
        f"broker.heartbeat.interval.ms={HEARTBEAT_MS}",
        f"broker.session.timeout.ms={SESSION_MS}",
        *overrides,
    )


def find_coordinators(port: int, groups: list[str]) -> list[Any]:
    """The groups' coordinators, once every one is available."""
    found: list[Any] = []

    def ready() -> bool:
        request = FindCoordinatorRequest(key_type=i8(0), coordinator_keys=tuple(groups))
        found[:] = call_once(port, request).coordinators
        return all(c.error_code == ErrorCode.none for c in found)

    wait_for(ready, timeout=30)
    return found


def test_a_broker_without_the_clients_listener_is_left_out(tmp_path: Path, store_url: str) -> None:
    """Broker 2 has no INTERNAL listener: INTERNAL clients are not told of it,
    and its partitions have no leader for them (LISTENER_NOT_FOUND, as Kafka)."""
    internal = free_port()
    plain = {1: free_port(), 2: free_port()}
    first = cluster_broker(
        tmp_path,
        store_url,
        1,
        plain[1],
        f"listeners=PLAINTEXT://127.0.0.1:{plain[1]},INTERNAL://127.0.0.1:{internal}",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
    )
    second = cluster_broker(
        tmp_path, store_url, 2, plain[2], f"listeners=PLAINTEXT://127.0.0.1:{plain[2]}"
    )
    try:
        first.start()
        second.start()
        wait_for(lambda: len(metadata(plain[1]).brokers) == 2)
        assert create_topic(plain[1], "halves", 4) == ErrorCode.none
        led = leaders(plain[1], "halves")
        assert set(led.values()) == {1, 2}
        answer = metadata(internal, "halves")
        assert [(b.node_id, b.port) for b in answer.brokers] == [(1, internal)]
        partitions = {p.partition_index: p for p in answer.topics[0].partitions}
        for index, leader in led.items():
            p = partitions[index]
            if leader == 1:
                assert (p.error_code, p.leader_id) == (ErrorCode.none, 1)
            else:
                assert (p.error_code, p.leader_id) == (ErrorCode.listener_not_found, -1)
    finally:
        first.stop()
        second.stop()


def register_as_an_older_release(store_url: str, broker_id: int, address: str) -> None:
    """What a broker of the one-address release writes when it registers (again):
    a new incarnation and its one address, leaving the listeners column alone."""
    with psycopg.connect(store_url, autocommit=True) as conn:
        conn.execute(
            """INSERT INTO kgroups_brokers AS b
                    (broker_id, lease_epoch, incarnation, listener, rack,
                     lease_expires_at, registered_at)
                VALUES (%s, 1, %s, %s, NULL, now() + INTERVAL '1 hour', now())
                ON CONFLICT (broker_id) DO UPDATE SET
                    lease_epoch = b.lease_epoch + 1,
                    incarnation = excluded.incarnation,
                    listener = excluded.listener,
                    lease_expires_at = excluded.lease_expires_at,
                    registered_at = excluded.registered_at""",
            (broker_id, uuid.uuid4(), address),
        )


def test_a_broker_registered_by_an_older_release_is_given_only_on_the_inter_broker_listener(
    tmp_path: Path, store_url: str
) -> None:
    """An older release registered one address, its inter-broker listener's: the
    clients of another listener (here SSL-less, but any) are not told that port.
    Broker 7 never registered listeners; broker 8 did, then an older release
    took its id again, so the listeners stored are not its own any more."""
    internal, external = free_port(), free_port()
    broker = cluster_broker(
        tmp_path,
        store_url,
        1,
        internal,
        f"listeners=INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
        "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "inter.broker.listener.name=INTERNAL",
    ).start()
    try:
        store = Store.connect(store_url)
        try:
            register(
                store,
                8,
                "10.0.0.8:9093",
                SESSION_MS,
                incarnation=uuid.uuid4(),
                listeners={"INTERNAL": "10.0.0.8:9093", "EXTERNAL": "stale-8:9092"},
            )
        finally:
            store.close()
        register_as_an_older_release(store_url, 7, "10.0.0.7:9093")
        register_as_an_older_release(store_url, 8, "10.0.0.8:9094")
        wait_for(lambda: len(metadata(internal).brokers) == 3)
        on_internal = [(b.node_id, b.host, b.port) for b in metadata(internal).brokers]
        assert on_internal == [
            (1, "127.0.0.1", internal),
            (7, "10.0.0.7", 9093),
            (8, "10.0.0.8", 9094),
        ]
        for answer in (
            metadata(external).brokers,
            call_once(
                external, DescribeClusterRequest(include_cluster_authorized_operations=False)
            ).brokers,
        ):
            assert [(b.host, b.port) for b in answer] == [("127.0.0.1", external)]
    finally:
        broker.stop()


def test_the_brokers_addresses_are_worked_out_once_per_change_of_the_live_brokers(
    tmp_path: Path, store_url: str
) -> None:
    """Metadata, DescribeCluster and FindCoordinator read a map made when the
    live brokers change, not one rebuilt for each request."""
    broker = ThreadBroker(
        tmp_path,
        {
            "cluster.store.url": store_url,
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "broker.heartbeat.interval.ms": str(HEARTBEAT_MS),
            "broker.session.timeout.ms": str(SESSION_MS),
        },
    ).start()
    try:
        assert broker.broker is not None and broker.broker.cluster is not None
        cluster = broker.broker.cluster

        def addresses() -> dict[int, tuple[str, int]]:
            return broker.call(lambda: cluster.addresses("PLAINTEXT"))

        first = addresses()
        assert first == {0: ("127.0.0.1", broker.port)}
        assert addresses() is first
        register_as_an_older_release(store_url, 7, "10.0.0.7:9092")
        wait_for(lambda: addresses() is not first)
        assert addresses() == {0: ("127.0.0.1", broker.port), 7: ("10.0.0.7", 9092)}
        assert broker.call(lambda: cluster.address(7, "PLAINTEXT")) == ("10.0.0.7", 9092)
        assert broker.call(lambda: cluster.address(7, "SSL")) is None
    finally:
        broker.stop()
