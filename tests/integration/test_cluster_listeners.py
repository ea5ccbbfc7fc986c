"""Cluster mode with two listeners: the registered one is the inter-broker listener's,
and each client still sees this broker at its own listener's address."""

from pathlib import Path
from typing import Any

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

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8

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
