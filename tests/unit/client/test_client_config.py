"""Client configuration: Java's names and defaults, and clear errors."""

from __future__ import annotations

import re

import pytest

from kgroups.client.config_schema import ConfigError
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.producer_config import ProducerConfig

BOOTSTRAP = {"bootstrap.servers": "127.0.0.1:9092"}


def test_consumer_defaults_are_the_java_clients() -> None:
    config = ConsumerConfig.from_dict({**BOOTSTRAP, "group.id": "g"})
    assert config.session_timeout_ms == 45000
    assert config.heartbeat_interval_ms == 3000
    assert config.max_poll_interval_ms == 300000
    assert config.rebalance_timeout_ms == 300000
    assert config.max_poll_records == 500
    assert config.enable_auto_commit is True
    assert config.auto_commit_interval_ms == 5000
    assert config.auto_offset_reset == "latest"
    assert config.partition_assignment_strategy == ("range", "cooperative-sticky")
    assert config.fetch_min_bytes == 1
    assert config.fetch_max_bytes == 52428800
    assert config.fetch_max_wait_ms == 500
    assert config.max_partition_fetch_bytes == 1048576
    assert config.isolation_level == "read_uncommitted"
    assert config.retry_backoff_ms == 100
    assert config.request_timeout_ms == 30000
    assert config.group_instance_id is None


def test_values_may_be_strings_as_in_a_properties_file() -> None:
    config = ConsumerConfig.from_dict(
        {
            **BOOTSTRAP,
            "group.id": "g",
            "enable.auto.commit": "false",
            "max.poll.records": "10",
            "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RoundRobinAssignor,"
            " cooperative-sticky",
        }
    )
    assert config.enable_auto_commit is False
    assert config.max_poll_records == 10
    assert config.partition_assignment_strategy == ("roundrobin", "cooperative-sticky")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"group.idd": "g"}, "unknown consumer config 'group.idd'; did you mean 'group.id'"),
        ({"key.deserializer": "x"}, "not supported: records carry bytes"),
        ({"group.id": "g", "max.poll.records": 0}, "below its minimum"),
        ({"group.id": "g", "auto.offset.reset": "smallest"}, "not one of earliest"),
        ({"group.id": "g", "session.timeout.ms": "abc"}, "expected an integer"),
        ({"group.id": "g", "enable.auto.commit": "yes"}, "expected true or false"),
        ({"group.id": "g", "partition.assignment.strategy": "fancy"}, "no partition assignor"),
        ({"group.instance.id": "i"}, "group.instance.id needs a group.id"),
        ({"enable.auto.commit": True}, "needs a group.id"),
        (
            {"group.id": "g", "heartbeat.interval.ms": 10000, "session.timeout.ms": 6000},
            "lower than session.timeout.ms",
        ),
    ],
)
def test_consumer_configs_that_cannot_work_are_refused(
    settings: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        ConsumerConfig.from_dict({**BOOTSTRAP, **settings})


def test_bootstrap_servers_are_required() -> None:
    with pytest.raises(ConfigError, match=re.escape("bootstrap.servers is required")):
        ConsumerConfig.from_dict({"group.id": "g"})


def test_without_a_group_auto_commit_is_off() -> None:
    assert ConsumerConfig.from_dict(BOOTSTRAP).enable_auto_commit is False


def test_producer_defaults_are_the_java_clients() -> None:
    config = ProducerConfig.from_dict(BOOTSTRAP)
    assert config.acks == -1
    assert config.enable_idempotence is True
    assert config.batch_size == 16384
    assert config.linger_ms == 5
    assert config.compression == 0
    assert config.max_in_flight == 5
    assert config.delivery_timeout_ms == 120000


def test_default_idempotence_steps_aside_for_conflicting_settings() -> None:
    assert ProducerConfig.from_dict({**BOOTSTRAP, "acks": 1}).enable_idempotence is False
    with pytest.raises(ConfigError, match="acks must be all"):
        ProducerConfig.from_dict({**BOOTSTRAP, "acks": "1", "enable.idempotence": "true"})
    with pytest.raises(ConfigError, match="at most 5"):
        ProducerConfig.from_dict(
            {**BOOTSTRAP, "enable.idempotence": True, "max.in.flight.requests.per.connection": 6}
        )


def test_producer_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="not one of"):
        ProducerConfig.from_dict({**BOOTSTRAP, "compression.type": "brotli"})
    with pytest.raises(ConfigError, match="expected all, -1, 0 or 1"):
        ProducerConfig.from_dict({**BOOTSTRAP, "acks": "some"})
    with pytest.raises(ConfigError, match="needs enable"):
        ProducerConfig.from_dict(
            {**BOOTSTRAP, "transactional.id": "t", "enable.idempotence": False}
        )
    with pytest.raises(ConfigError, match="acks must be all"):
        ProducerConfig.from_dict({**BOOTSTRAP, "transactional.id": "t", "acks": 1})
    transactional = ProducerConfig.from_dict({**BOOTSTRAP, "transactional.id": "t"})
    assert transactional.transactional_id == "t"
    assert transactional.enable_idempotence
    assert transactional.transaction_timeout_ms == 60000
    with pytest.raises(ConfigError, match=re.escape("delivery.timeout.ms")):
        ProducerConfig.from_dict({**BOOTSTRAP, "delivery.timeout.ms": 1000})
    assert ProducerConfig.from_dict({**BOOTSTRAP, "compression.type": "zstd"}).compression == 4
