"""confluent-kafka (librdkafka) pushes its metrics by default (KIP-714,
enable.metrics.push): with a subscription set, a producer's and a consumer's
metrics appear on the Prometheus endpoint, labelled by client, while both
keep producing and consuming."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from config_admin_wire import SET, incremental

from kgroups.errors import ErrorCode

from broker_thread import BrokerThread
from prometheus_text import Scrape, scrape

pytestmark = pytest.mark.interop

CLIENT_METRICS = 16


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", metrics_port=0).start()
    try:
        yield b
    finally:
        b.stop()


def _client_families(m: Scrape, client_id: str) -> set[str]:
    return {
        name
        for name, labels in m.samples
        if name.startswith("kafka_client_") and ("client_id", client_id) in labels
    }


def test_producer_and_consumer_metrics_reach_the_endpoint(broker: BrokerThread) -> None:
    from confluent_kafka import Consumer, Producer

    ops = [("metrics", SET, "*"), ("interval.ms", SET, "500")]
    assert incremental(broker.port, [(CLIENT_METRICS, "everything", ops)]) == [
        ("everything", ErrorCode.none, None)
    ]
    assert broker.broker is not None and broker.broker.metrics is not None
    endpoint = broker.broker.metrics.port
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "telemetry-producer"})
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": "telemetry-consumer",
            "group.id": "telemetry-group",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe(["telemetry-topic"])
        consumed = 0
        deadline = time.monotonic() + 60
        m = scrape(endpoint)
        while time.monotonic() < deadline:
            producer.produce("telemetry-topic", b"value")
            producer.poll(0)
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                consumed += 1
            m = scrape(endpoint)
            if (
                consumed
                and _client_families(m, "telemetry-producer")
                and _client_families(m, "telemetry-consumer")
            ):
                break
        assert consumed > 0
        producer_families = _client_families(m, "telemetry-producer")
        assert "kafka_client_producer_node_request_latency_avg" in producer_families
        consumer_families = _client_families(m, "telemetry-consumer")
        assert any(f.startswith("kafka_client_consumer_") for f in consumer_families)
        software = {
            value
            for name, labels in m.samples
            if name.startswith("kafka_client_")
            for key, value in labels
            if key == "client_software_name"
        }
        assert software == {"confluent-kafka-python"}
        assert m.value("kafka_server_clientmetrics_instance_count") >= 2
        assert m.value("kafka_server_clientmetrics_plugin_error_total") == 0
        assert producer.flush(10) == 0
    finally:
        consumer.close()


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_librdkafka_payloads_in_every_codec_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codec: int
) -> None:
    """librdkafka compresses with the first accepted type it knows: offered
    one at a time, each of its encodings is read."""
    from confluent_kafka import Producer

    import kgroups.metrics.client_telemetry as telemetry

    monkeypatch.setattr(telemetry, "ACCEPTED_COMPRESSION", (codec,))
    b = BrokerThread(tmp_path / "data", metrics_port=0).start()
    try:
        ops = [("metrics", SET, "*"), ("interval.ms", SET, "200")]
        incremental(b.port, [(CLIENT_METRICS, "everything", ops)])
        producer = Producer({"bootstrap.servers": b.bootstrap, "client.id": f"codec-{codec}"})
        assert b.broker is not None
        stats = b.broker.client_telemetry.stats
        deadline = time.monotonic() + 30
        while stats.exported < 2 and time.monotonic() < deadline:
            producer.produce("codec-topic", b"value")
            producer.poll(0.1)
        assert producer.flush(10) == 0
        assert stats.exported >= 2 and stats.export_errors == 0
    finally:
        b.stop()
