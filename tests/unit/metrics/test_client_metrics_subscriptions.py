"""CLIENT_METRICS subscriptions as Kafka's ClientMetricsConfigs reads them,
and which clients they match (ClientMetricsInstanceMetadataTest)."""

from __future__ import annotations

import pytest

from kgroups.config.client_metrics import DEFAULT_INTERVAL_MS, parse_subscription
from kgroups.errors import ErrorCode, KafkaError

CLIENT = {
    "client_instance_id": "a5a6d8b8-5a3b-4bb4-9e1d-6a7b9b1c2d3e",
    "client_id": "producer-1",
    "client_software_name": "apache-kafka-java",
    "client_software_version": "3.7.0",
    "client_source_address": "10.1.2.3",
    "client_source_port": "52341",
}


def test_the_three_keys() -> None:
    s = parse_subscription(
        "sub-1",
        {
            "metrics": "org.apache.kafka.producer., org.apache.kafka.consumer.coordinator",
            "interval.ms": "1000",
            "match": "client_id=producer-.*,client_software_version=3\\.7\\..*",
        },
    )
    assert s.metrics == {"org.apache.kafka.producer.", "org.apache.kafka.consumer.coordinator"}
    assert s.interval_ms == 1000
    assert [selector for selector, _ in s.match] == ["client_id", "client_software_version"]


def test_defaults_all_clients_every_five_minutes_no_metrics() -> None:
    s = parse_subscription("sub", {"interval.ms": "100"})
    assert s.metrics == frozenset() and s.match == () and s.matches(CLIENT)
    assert parse_subscription("sub", {"metrics": "*"}).interval_ms == DEFAULT_INTERVAL_MS


@pytest.mark.parametrize(
    ("match", "matches"),
    [
        ("client_id=producer-1", True),
        ("client_id=producer", False),  # the whole value, as Java's matches()
        ("client_id=.*-1", True),
        ("client_software_name=apache-kafka-java,client_software_version=3.7.0", True),
        ("client_software_name=apache-kafka-java,client_software_version=3.8.*", False),
        ("client_source_address=10\\.1\\..*", True),
        ("client_source_port=5234[0-9]", True),
        ("client_instance_id=a5a6d8b8-.*", True),
    ],
)
def test_every_selector_must_match_the_whole_value(match: str, matches: bool) -> None:
    assert parse_subscription("sub", {"match": match}).matches(CLIENT) is matches


def test_a_selector_the_client_has_no_value_for_does_not_match() -> None:
    s = parse_subscription("sub", {"match": "client_software_name=.*"})
    assert not s.matches({**CLIENT, "client_software_name": None})


@pytest.mark.parametrize(
    ("name", "configs", "error"),
    [
        ("", {"metrics": "*"}, ErrorCode.invalid_request),
        ("sub", {"random": "x"}, ErrorCode.invalid_request),
        ("sub", {"interval.ms": "99"}, ErrorCode.invalid_request),
        ("sub", {"interval.ms": "3600001"}, ErrorCode.invalid_request),
        ("sub", {"interval.ms": "soon"}, ErrorCode.invalid_config),
        ("sub", {"match": "client_id"}, ErrorCode.invalid_config),
        ("sub", {"match": "client_id=a=b"}, ErrorCode.invalid_config),
        ("sub", {"match": "client_name=x"}, ErrorCode.invalid_config),
        ("sub", {"match": "client_id=[unclosed"}, ErrorCode.invalid_config),
    ],
)
def test_refused_as_kafka_refuses_them(
    name: str, configs: dict[str, str], error: ErrorCode
) -> None:
    with pytest.raises(KafkaError) as refused:
        parse_subscription(name, configs)
    assert refused.value.error_code == error


def test_interval_bounds_are_inclusive() -> None:
    assert parse_subscription("s", {"interval.ms": "100"}).interval_ms == 100
    assert parse_subscription("s", {"interval.ms": "3600000"}).interval_ms == 3_600_000
