"""Client telemetry (KIP-714) on the wire, as Kafka answers it: the
subscriptions set as CLIENT_METRICS configs, GetTelemetrySubscriptions and
PushTelemetry with their errors, and the pushed metrics on the Prometheus
endpoint until the client stops. Time is virtual."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from config_admin_wire import APPEND, DELETE, SET, configs, described, incremental, legacy
from kio.schema.list_config_resources.v0 import ListConfigResourcesRequest
from kio.schema.push_telemetry.v0 import PushTelemetryRequest
from otlp_payloads import gauge, metrics_data, number_point, sum_metric
from telemetry_client import Client

from kgroups.clock import ManualClock
from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8, i32
from kgroups.records.compression import GZIP, ZSTD, compress

from broker_thread import BrokerThread
from prometheus_text import scrape
from raw_wire import call, call_once

CLIENT_METRICS = 16
CLIENT_METRICS_CONFIG = 7
ZERO = uuid.UUID(int=0)
QUEUE_TIME = "org.apache.kafka.producer.record.queue.time.avg"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def broker(tmp_path: Path, clock: ManualClock) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", clock, metrics_port=0, telemetry_max_bytes=4096).start()
    try:
        yield b
    finally:
        b.stop()


def _subscribe(b: BrokerThread, name: str, **keys: str) -> None:
    ops = [(k.replace("_", "."), SET, v) for k, v in keys.items()]
    assert incremental(b.port, [(CLIENT_METRICS, name, ops)]) == [(name, ErrorCode.none, None)]


def test_advertised_with_the_endpoint_only(broker: BrokerThread, tmp_path: Path) -> None:
    client = Client(broker.port)
    assert client.advertised[71] == (0, 0) and client.advertised[72] == (0, 0)
    assert client.advertised[74] == (0, 0)
    client.close()
    b = BrokerThread(tmp_path / "other").start()  # no metrics.port
    try:
        plain = Client(b.port)
        assert 71 not in plain.advertised and 72 not in plain.advertised
        plain.close()
    finally:
        b.stop()


def test_a_subscribed_client_pushes_and_its_metrics_are_scraped(
    broker: BrokerThread, clock: ManualClock
) -> None:
    _subscribe(broker, "producers", metrics="org.apache.kafka.producer.", interval_ms="1000")
    client = Client(broker.port)
    got = client.get(ZERO)
    assert got.error_code == ErrorCode.none
    assert got.client_instance_id not in (None, ZERO)
    assert got.requested_metrics == ("org.apache.kafka.producer.",)
    assert got.push_interval.total_seconds() == 1
    assert list(got.accepted_compression_types) == [4, 3, 1, 2]  # zstd, lz4, gzip, snappy
    assert got.telemetry_max_bytes == 4096 and got.delta_temporality

    counter = "org.apache.kafka.producer.connection.creation.total"
    for delta in (1, 2):
        payload = metrics_data(
            gauge(QUEUE_TIME, number_point(2.5)),
            sum_metric(counter, number_point(delta, as_int=True)),
        )
        assert client.push(compress(ZSTD, payload), compression=ZSTD) == ErrorCode.none
        clock.advance(1000)

    m = scrape(broker.broker.metrics.port)  # type: ignore[union-attr]
    labels = {
        "client_instance_id": str(client.instance),
        "client_id": "t",
        "client_software_name": "apache-kafka-java",
        "client_software_version": "3.9.0",
    }
    assert m.value("kafka_client_producer_record_queue_time_avg", **labels) == 2.5
    assert m.value("kafka_client_producer_connection_creation_total", **labels) == 3
    assert m.types["kafka_client_producer_connection_creation_total"] == "counter"
    assert m.value("kafka_server_clientmetrics_instance_count") == 1
    assert m.value("kafka_server_clientmetrics_plugin_export_total") == 2

    # Gone max(60 s, 3 intervals) after the client stops pushing.
    clock.advance(60_000)
    m = scrape(broker.broker.metrics.port)  # type: ignore[union-attr]
    assert "kafka_client_producer_record_queue_time_avg" not in m.types
    assert m.value("kafka_server_clientmetrics_instance_count") == 0
    client.close()


def test_match_selects_clients_by_software_and_id(broker: BrokerThread) -> None:
    _subscribe(
        broker,
        "java-3-9",
        metrics="*",
        interval_ms="2000",
        match="client_software_name=apache-kafka-java,client_software_version=3\\.9\\..*,client_id=t",
    )
    java = Client(broker.port)
    rdkafka = Client(broker.port, "librdkafka", "2.5.0")
    assert java.get(ZERO).requested_metrics == ("*",)
    other = rdkafka.get(ZERO)
    assert other.requested_metrics == () and other.push_interval.total_seconds() == 300
    java.close()
    rdkafka.close()


def test_every_refusal_of_a_push(broker: BrokerThread, clock: ManualClock) -> None:
    _subscribe(broker, "all", metrics="*", interval_ms="1000")
    client = Client(broker.port)
    payload = metrics_data(gauge(QUEUE_TIME, number_point(1)))
    client.get(ZERO)
    assert client.get().error_code == ErrorCode.throttling_quota_exceeded
    assert client.push(payload) == ErrorCode.none  # the first right after a Get
    assert client.push(payload) == ErrorCode.throttling_quota_exceeded
    clock.advance(1000)
    assert client.push(payload, subscription=client.subscription ^ 1) == (
        ErrorCode.unknown_subscription_id
    )
    clock.advance(1000)
    assert client.push(payload, compression=9) == ErrorCode.unsupported_compression_type
    clock.advance(1000)
    assert client.push(b"x" * 4097) == ErrorCode.telemetry_too_large
    clock.advance(1000)
    assert client.push(b"definitely not protobuf") == ErrorCode.invalid_record
    clock.advance(1000)
    assert client.push(compress(GZIP, b"\xff\x01garbage"), compression=GZIP) == (
        ErrorCode.invalid_record
    )
    clock.advance(1000)
    assert client.push(compress(GZIP, payload), compression=GZIP) == ErrorCode.none
    # The terminating push is accepted at once, and is the last.
    assert client.push(payload, terminating=True) == ErrorCode.none
    clock.advance(1000)
    assert client.push(payload, terminating=True) == ErrorCode.invalid_request
    zero = PushTelemetryRequest(
        client_instance_id=ZERO,
        subscription_id=i32(0),
        terminating=False,
        compression_type=i8(0),
        metrics=b"",
    )
    assert call(client.sock, zero)[0].error_code == ErrorCode.invalid_request
    client.close()


def test_a_changed_subscription_reaches_the_client_at_once(broker: BrokerThread) -> None:
    _subscribe(broker, "all", metrics="org.apache.kafka.consumer.", interval_ms="60000")
    client = Client(broker.port)
    first = client.get(ZERO)
    old_subscription = client.subscription
    _subscribe(broker, "all", metrics="org.apache.kafka.producer.", interval_ms="500")
    # The push with the old id is told so; the next Get is not throttled.
    assert client.push(b"") == ErrorCode.unknown_subscription_id
    again = client.get()
    assert again.error_code == ErrorCode.none
    assert again.client_instance_id == first.client_instance_id
    assert again.subscription_id != old_subscription
    assert again.requested_metrics == ("org.apache.kafka.producer.",)
    assert again.push_interval.total_seconds() == 0.5
    client.close()


def test_client_metrics_configs_are_kafkas(broker: BrokerThread, tmp_path: Path) -> None:
    port = broker.port
    answers = incremental(
        port,
        [
            (CLIENT_METRICS, "unknown-key", [("random", SET, "x")]),
            (CLIENT_METRICS, "too-often", [("interval.ms", SET, "99")]),
            (CLIENT_METRICS, "bad-match", [("match", SET, "client_name=x")]),
            (CLIENT_METRICS, "", [("metrics", SET, "*")]),
            (CLIENT_METRICS, "ok", [("metrics", SET, "a.,b."), ("interval.ms", SET, "1000")]),
        ],
    )
    assert [(name, error) for name, error, _ in answers] == [
        ("unknown-key", ErrorCode.invalid_request),
        ("too-often", ErrorCode.invalid_request),
        ("bad-match", ErrorCode.invalid_config),
        ("", ErrorCode.invalid_request),
        ("ok", ErrorCode.none),
    ]
    assert configs(port, CLIENT_METRICS, "ok") == {
        "interval.ms": ("1000", CLIENT_METRICS_CONFIG),
        "metrics": ("a.,b.", CLIENT_METRICS_CONFIG),
    }
    assert described(port, CLIENT_METRICS, "").error_code == ErrorCode.invalid_request
    assert configs(port, CLIENT_METRICS, "never-set") == {}
    # The lists take APPEND and SUBTRACT; the interval does not.
    appended = incremental(port, [(CLIENT_METRICS, "ok", [("metrics", APPEND, "c.")])])
    assert appended == [("ok", ErrorCode.none, None)]
    assert configs(port, CLIENT_METRICS, "ok")["metrics"] == ("a.,b.,c.", CLIENT_METRICS_CONFIG)
    refused = incremental(port, [(CLIENT_METRICS, "ok", [("interval.ms", APPEND, "5")])])
    assert refused[0][1] == ErrorCode.invalid_config
    # AlterConfigs replaces the set whole.
    assert legacy(port, [(CLIENT_METRICS, "whole", {"metrics": "*"})]) == [
        ("whole", ErrorCode.none, None)
    ]
    listed = call_once(port, ListConfigResourcesRequest())
    assert listed.error_code == ErrorCode.none
    assert [r.resource_name for r in listed.config_resources] == ["ok", "whole"]
    # Deleting every key removes the subscription.
    incremental(port, [(CLIENT_METRICS, "whole", [("metrics", DELETE, None)])])
    listed = call_once(port, ListConfigResourcesRequest())
    assert [r.resource_name for r in listed.config_resources] == ["ok"]


def test_subscriptions_survive_a_restart(tmp_path: Path, clock: ManualClock) -> None:
    b = BrokerThread(tmp_path / "data", clock, metrics_port=0).start()
    try:
        _subscribe(b, "kept", metrics="*", interval_ms="700")
    finally:
        b.stop()
    b = BrokerThread(tmp_path / "data", clock, metrics_port=0).start()
    try:
        client = Client(b.port)
        got = client.get(ZERO)
        assert got.requested_metrics == ("*",) and got.push_interval.total_seconds() == 0.7
        client.close()
    finally:
        b.stop()
