"""Cluster mode with two listeners: the registered one is the inter-broker listener's,
and each client still sees this broker at its own listener's address."""

from pathlib import Path

from cluster_brokers import HEARTBEAT_MS, SESSION_MS, metadata

from process_broker import BrokerProcess, free_port


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
