"""The client telemetry manager on virtual time, after Kafka's
ClientMetricsManagerTest: subscriptions, client instance ids, subscription
ids, the push interval, and every refusal of a push."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.get_telemetry_subscriptions.v0 import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
)
from kio.schema.push_telemetry.v0 import PushTelemetryRequest
from otlp_payloads import gauge, metrics_data, number_point, sum_metric

from kgroups.clock import ManualClock
from kgroups.errors import ErrorCode, KafkaError
from kgroups.metrics.client_metric_series import ClientMetricSeries
from kgroups.metrics.client_telemetry import ClientIdentity, ClientTelemetry, subscription_id
from kgroups.metrics.exposition import Exposition
from kgroups.protocol.types import i8, i32
from kgroups.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress

DEFAULT_METRICS = (
    "org.apache.kafka.client.producer.partition.queue.,"
    "org.apache.kafka.client.producer.partition.latency"
)
INTERVAL_MS = 30_000
DEFAULT_SUBSCRIPTION = {
    "metrics": DEFAULT_METRICS,
    "interval.ms": str(INTERVAL_MS),
    "match": "client_software_name=apache-kafka-java,client_software_version=3.5.*",
}
JAVA = ClientIdentity("producer-1", "apache-kafka-java", "3.5.2", "10.0.0.7", 56078)
PAYLOAD = metrics_data(gauge("org.apache.kafka.producer.record.queue.time.avg", number_point(2.0)))
ZERO = uuid.UUID(int=0)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def series() -> ClientMetricSeries:
    return ClientMetricSeries()


@pytest.fixture
def manager(clock: ManualClock, series: ClientMetricSeries) -> ClientTelemetry:
    return ClientTelemetry(clock, 1024, series, expiry_ms=100)


def _get(
    m: ClientTelemetry,
    instance: uuid.UUID | None = None,
    who: ClientIdentity = JAVA,
    conn: object = None,
) -> GetTelemetrySubscriptionsResponse:
    return m.get_subscriptions(
        GetTelemetrySubscriptionsRequest(client_instance_id=instance), who, conn
    )


def _push(
    m: ClientTelemetry,
    got: GetTelemetrySubscriptionsResponse,
    *,
    metrics: bytes = PAYLOAD,
    compression: int = NONE,
    terminating: bool = False,
    subscription: int | None = None,
    conn: object = None,
) -> ErrorCode:
    request = PushTelemetryRequest(
        client_instance_id=got.client_instance_id,
        subscription_id=i32(got.subscription_id if subscription is None else subscription),
        terminating=terminating,
        compression_type=i8(compression),
        metrics=metrics,
    )
    return m.push(request, JAVA, conn).error_code


def _scraped(series: ClientMetricSeries) -> str:
    out = Exposition()
    series.write(out)
    return out.text()


def test_a_matching_subscription_is_the_clients(manager: ClientTelemetry) -> None:
    manager.update_subscription("sub-1", DEFAULT_SUBSCRIPTION)
    got = _get(manager, ZERO)
    assert got.error_code == ErrorCode.none
    assert got.client_instance_id not in (None, ZERO)
    assert sorted(got.requested_metrics) == sorted(DEFAULT_METRICS.split(","))
    assert list(got.accepted_compression_types) == [ZSTD, LZ4, GZIP, SNAPPY]
    assert got.push_interval.total_seconds() * 1000 == INTERVAL_MS
    assert got.delta_temporality is True
    assert got.telemetry_max_bytes == 1024
    assert got.subscription_id == subscription_id(
        tuple(sorted(DEFAULT_METRICS.split(","))), INTERVAL_MS, got.client_instance_id
    )
    assert manager.instance_count == 1


def test_without_a_subscription_no_metrics_every_five_minutes(manager: ClientTelemetry) -> None:
    got = _get(manager)  # a null id is the zero id
    assert got.error_code == ErrorCode.none and got.client_instance_id is not None
    assert got.requested_metrics == ()
    assert got.push_interval.total_seconds() == 300
    assert got.subscription_id != 0


def test_a_subscription_the_client_does_not_match_is_not_its(manager: ClientTelemetry) -> None:
    manager.update_subscription("sub-1", DEFAULT_SUBSCRIPTION)
    librdkafka = ClientIdentity("p", "librdkafka", "2.5.0", "10.0.0.7", 1)
    assert _get(manager, who=librdkafka).requested_metrics == ()


def test_all_metrics_wins_over_prefixes_and_the_shortest_interval_is_taken(
    manager: ClientTelemetry,
) -> None:
    manager.update_subscription("sub-1", DEFAULT_SUBSCRIPTION)
    manager.update_subscription("sub-2", {"metrics": "*", "interval.ms": "60000"})
    got = _get(manager)
    assert got.requested_metrics == ("*",)
    assert got.push_interval.total_seconds() * 1000 == INTERVAL_MS


def test_a_second_get_before_the_interval_is_throttled(
    manager: ClientTelemetry, clock: ManualClock
) -> None:
    got = _get(manager)
    again = _get(manager, got.client_instance_id)
    assert again.error_code == ErrorCode.throttling_quota_exceeded
    assert manager.stats.throttled == 1
    clock.advance(300_000)
    assert _get(manager, got.client_instance_id).error_code == ErrorCode.none


def test_changed_subscriptions_are_answered_at_once_with_a_new_id(manager: ClientTelemetry) -> None:
    manager.update_subscription("sub-1", DEFAULT_SUBSCRIPTION)
    got = _get(manager)
    manager.update_subscription("sub-2", {"metrics": "*"})
    again = _get(manager, got.client_instance_id)
    assert again.error_code == ErrorCode.none  # not throttled: the subscription changed
    assert again.client_instance_id == got.client_instance_id
    assert again.subscription_id != got.subscription_id
    # A push with the old id is refused; with the new one accepted.
    assert _push(manager, got) == ErrorCode.unknown_subscription_id
    assert manager.stats.unknown_subscription_requests == 1


def test_push_right_after_get_then_each_interval(
    manager: ClientTelemetry, clock: ManualClock
) -> None:
    manager.update_subscription("sub-1", DEFAULT_SUBSCRIPTION)
    got = _get(manager)
    assert _push(manager, got) == ErrorCode.none
    assert _push(manager, got) == ErrorCode.throttling_quota_exceeded
    clock.advance(INTERVAL_MS - 1)
    assert _push(manager, got) == ErrorCode.throttling_quota_exceeded
    clock.advance(1)
    assert _push(manager, got) == ErrorCode.none
    assert manager.stats.exported == 2 and manager.stats.throttled == 2


def test_a_push_to_a_broker_that_never_saw_the_client_is_accepted(clock: ManualClock) -> None:
    first = ClientTelemetry(clock, 1024, ClientMetricSeries())
    other = ClientTelemetry(clock, 1024, ClientMetricSeries())
    for m in (first, other):
        m.update_subscription("sub-1", {"metrics": "*", "interval.ms": "1000"})
    got = _get(first)
    assert _push(other, got) == ErrorCode.none
    # Then, on that broker, a Get before the interval is throttled.
    assert _get(other, got.client_instance_id).error_code == ErrorCode.throttling_quota_exceeded


@pytest.mark.parametrize("instance", [None, ZERO, uuid.UUID(int=1)])
def test_a_push_without_a_client_instance_id_is_invalid(
    manager: ClientTelemetry, instance: uuid.UUID | None
) -> None:
    request = PushTelemetryRequest(
        client_instance_id=instance,
        subscription_id=i32(0),
        terminating=False,
        compression_type=i8(0),
        metrics=b"",
    )
    assert manager.push(request, JAVA).error_code == ErrorCode.invalid_request


def test_the_terminating_push_is_accepted_early_and_is_the_last(
    manager: ClientTelemetry, clock: ManualClock
) -> None:
    got = _get(manager)
    assert _push(manager, got) == ErrorCode.none
    assert _push(manager, got, terminating=True) == ErrorCode.none  # not throttled
    clock.advance(300_000)
    assert _push(manager, got, terminating=True) == ErrorCode.invalid_request
    assert _push(manager, got) == ErrorCode.invalid_request


def test_an_empty_push_is_accepted_and_exports_nothing(manager: ClientTelemetry) -> None:
    assert _push(manager, _get(manager), metrics=b"") == ErrorCode.none
    assert manager.stats.exported == 0


def test_an_unknown_compression_type_is_refused(manager: ClientTelemetry) -> None:
    assert _push(manager, _get(manager), compression=100) == ErrorCode.unsupported_compression_type


def test_metrics_larger_than_telemetry_max_bytes_are_refused(clock: ManualClock) -> None:
    manager = ClientTelemetry(clock, 1, ClientMetricSeries())
    assert _push(manager, _get(manager), metrics=b"ab") == ErrorCode.telemetry_too_large


def test_undecodable_metrics_are_an_invalid_record(manager: ClientTelemetry) -> None:
    got = _get(manager)
    assert _push(manager, got, metrics=b"test-data") == ErrorCode.invalid_record
    assert manager.stats.export_errors == 1


def test_a_payload_that_does_not_decompress_is_an_invalid_record(manager: ClientTelemetry) -> None:
    got = _get(manager)
    assert _push(manager, got, metrics=b"not zstd", compression=ZSTD) == ErrorCode.invalid_record


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_compressed_metrics_are_read(
    manager: ClientTelemetry, series: ClientMetricSeries, codec: int
) -> None:
    got = _get(manager)
    assert (
        _push(manager, got, metrics=compress(codec, PAYLOAD), compression=codec) == ErrorCode.none
    )
    assert "kafka_client_producer_record_queue_time_avg{" in _scraped(series)


def test_without_a_receiver_metrics_are_accepted_unread(clock: ManualClock) -> None:
    manager = ClientTelemetry(clock, 1024, None)
    assert _push(manager, _get(manager), metrics=b"test-data") == ErrorCode.none


def test_series_are_labelled_by_client_and_deltas_add_up(
    manager: ClientTelemetry, series: ClientMetricSeries, clock: ManualClock
) -> None:
    manager.update_subscription("sub-1", {"metrics": "*", "interval.ms": "1000"})
    got = _get(manager)
    counter = "org.apache.kafka.producer.connection.creation.total"
    for delta in (2, 3):
        payload = metrics_data(
            sum_metric(counter, number_point(delta, as_int=True)),
            gauge(
                "org.apache.kafka.producer.node.request.latency.avg",
                number_point(1.5, [("node.id", "0")]),
            ),
        )
        assert _push(manager, got, metrics=payload) == ErrorCode.none
        clock.advance(1000)
    text = _scraped(series)
    labels = (
        f'client_instance_id="{got.client_instance_id}",client_id="producer-1",'
        'client_software_name="apache-kafka-java",client_software_version="3.5.2"'
    )
    assert "# TYPE kafka_client_producer_connection_creation_total counter" in text
    assert f"kafka_client_producer_connection_creation_total{{{labels}}} 5.0" in text
    assert f'kafka_client_producer_node_request_latency_avg{{{labels},node_id="0"}} 1.5' in text


def test_an_instance_and_its_series_expire_when_it_stops(
    manager: ClientTelemetry, series: ClientMetricSeries, clock: ManualClock
) -> None:
    manager.update_subscription("sub-1", {"metrics": "*", "interval.ms": "100"})
    got = _get(manager)
    assert _push(manager, got) == ErrorCode.none
    clock.advance(299)  # max(expiry 100 ms, 3 intervals)
    manager.expire(clock.now_ms())
    assert manager.instance_count == 1 and len(series) == 1
    clock.advance(1)
    manager.expire(clock.now_ms())
    assert manager.instance_count == 0 and len(series) == 0


def test_a_closed_connection_forgets_its_instance(manager: ClientTelemetry) -> None:
    conn = object()
    _get(manager, conn=conn)
    other = _get(manager, conn=object())
    manager.disconnected(conn)
    manager.disconnected(object())  # unknown: nothing happens
    assert manager.instance_count == 1
    assert _get(manager, other.client_instance_id).error_code == ErrorCode.throttling_quota_exceeded


def test_the_least_recently_used_instance_leaves_first(clock: ManualClock) -> None:
    manager = ClientTelemetry(clock, 1024, None, max_instances=2)
    first, second = _get(manager), _get(manager)
    _get(manager, first.client_instance_id)  # throttled, but used
    _get(manager)
    assert manager.instance_count == 2
    # The second was evicted: it is a new instance to this broker, so not throttled.
    assert _get(manager, second.client_instance_id).error_code == ErrorCode.none


def test_subscription_updates_and_removals(manager: ClientTelemetry) -> None:
    manager.update_subscription("sub-1", {})  # nothing to remove
    assert dict(manager.subscriptions) == {}
    manager.update_subscription("sub-1", {"interval.ms": "100"})
    assert manager.subscriptions["sub-1"].interval_ms == 100
    manager.update_subscription("sub-1", {})
    assert dict(manager.subscriptions) == {}
    with pytest.raises(KafkaError):
        manager.update_subscription("sub-1", {"random": "random"})


def test_subscription_ids_are_javas_uuid_hash_xor_crc() -> None:
    instance = uuid.UUID("00000000-0000-0001-0000-000000000002")
    # Java: Uuid(1, 2).hashCode() == 1 ^ 2 == 3.
    assert (
        subscription_id(("*",), 100, instance) ^ subscription_id(("*",), 100, uuid.UUID(int=0)) == 3
    )


def test_a_get_right_after_a_refused_compression_is_answered(
    manager: ClientTelemetry, clock: ManualClock
) -> None:
    got = _get(manager)
    assert _push(manager, got) == ErrorCode.none
    clock.advance(300_000)
    assert _push(manager, got, compression=100) == ErrorCode.unsupported_compression_type
    clock.advance(5)
    assert _get(manager, got.client_instance_id).error_code == ErrorCode.none
    # And the push after that Get is its first: not throttled.
    assert _push(manager, got) == ErrorCode.none


def test_a_payload_decompressing_past_ten_times_the_limit_is_an_invalid_record(
    clock: ManualClock,
) -> None:
    manager = ClientTelemetry(clock, 1024, ClientMetricSeries())
    bomb = compress(ZSTD, b"\x00" * (10 * 1024 + 1))
    assert len(bomb) <= 1024
    got = _get(manager)
    assert _push(manager, got, metrics=bomb, compression=ZSTD) == ErrorCode.invalid_record
    clock.advance(300_000)
    plain = metrics_data(*[gauge(f"g{i}", number_point(i)) for i in range(100)])
    assert 1024 < len(plain) <= 10 * 1024
    fits = compress(ZSTD, plain)
    assert _push(manager, got, metrics=fits, compression=ZSTD) == ErrorCode.none


def test_a_client_keeps_a_bounded_number_of_series(clock: ManualClock) -> None:
    series = ClientMetricSeries(max_series_per_client=3)
    manager = ClientTelemetry(clock, 1 << 20, series)
    got = _get(manager)
    payload = metrics_data(*[gauge(f"m{i}", number_point(i)) for i in range(5)])
    assert _push(manager, got, metrics=payload) == ErrorCode.none
    text = _scraped(series)
    assert [f"kafka_client_m{i}{{" in text for i in range(5)] == [True, True, True, False, False]


def test_attribute_names_become_valid_label_names(
    manager: ClientTelemetry, series: ClientMetricSeries
) -> None:
    attributes = [("node.id", "1"), ("9lives", "x"), ("__name__", "y"), ("client_id", "spoof")]
    payload = metrics_data(gauge("g", number_point(1, attributes)))
    assert _push(manager, _get(manager), metrics=payload) == ErrorCode.none
    line = next(x for x in _scraped(series).splitlines() if x.startswith("kafka_client_g{"))
    assert 'node_id="1"' in line and '_9lives="x"' in line and 'attribute__name__="y"' in line
    assert 'client_id="producer-1"' in line and "spoof" not in line  # the client's own label wins
