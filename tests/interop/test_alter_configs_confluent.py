"""confluent-kafka's AdminClient incremental_alter_configs, alter_configs and
describe_configs against kgroups, as Kafka's PlaintextAdminIntegrationTest
drives them (testIncrementalAlterConfigsForTopic, testAlterConfigs...)."""

from __future__ import annotations

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_incremental_and_legacy_alter_configs(broker: BrokerThread) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        NewTopic,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("t", 1, 1, config={"retention.ms": "60000"})])["t"].result(20)

    def described() -> dict[str, ConfigEntry]:
        resource = ConfigResource(ResourceType.TOPIC, "t")
        entries: dict[str, ConfigEntry] = admin.describe_configs([resource])[resource].result(20)
        return entries

    def incremental(*entries: ConfigEntry, validate_only: bool = False) -> None:
        resource = ConfigResource(ResourceType.TOPIC, "t", incremental_configs=list(entries))
        futures = admin.incremental_alter_configs([resource], validate_only=validate_only)
        futures[resource].result(20)

    incremental(
        ConfigEntry("segment.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
    )
    now = described()
    assert now["segment.ms"].value == "3600000"
    assert now["segment.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert now["cleanup.policy"].value == "delete,compact"
    assert now["retention.ms"].value == "604800000"
    assert now["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    incremental(
        ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT)
    )
    assert described()["cleanup.policy"].value == "compact"

    incremental(
        ConfigEntry("segment.ms", "1", incremental_operation=AlterConfigOpType.SET),
        validate_only=True,
    )
    assert described()["segment.ms"].value == "3600000"

    with pytest.raises(KafkaException) as refused:
        incremental(ConfigEntry("retention.ms", "-5", incremental_operation=AlterConfigOpType.SET))
    assert refused.value.args[0].name() == "INVALID_CONFIG"
    with pytest.raises(KafkaException) as refused:
        incremental(ConfigEntry("no.such", "1", incremental_operation=AlterConfigOpType.SET))
    assert refused.value.args[0].name() == "INVALID_CONFIG"
    with pytest.raises(KafkaException) as refused:
        missing = ConfigResource(
            ResourceType.TOPIC,
            "missing",
            incremental_configs=[
                ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)
            ],
        )
        admin.incremental_alter_configs([missing])[missing].result(20)
    assert refused.value.args[0].name() == "UNKNOWN_TOPIC_OR_PART"

    # AlterConfigs replaces every override of the topic.
    legacy = ConfigResource(ResourceType.TOPIC, "t", set_config={"retention.bytes": "1000000"})
    admin.alter_configs([legacy])[legacy].result(20)
    now = described()
    assert now["retention.bytes"].value == "1000000"
    assert now["retention.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert now["segment.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert now["cleanup.policy"].value == "delete"


def test_group_and_broker_configs(broker: BrokerThread) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def alter(resource: ConfigResource) -> None:
        admin.incremental_alter_configs([resource])[resource].result(20)

    def entry(key: str, value: str) -> ConfigEntry:
        return ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)

    group = ConfigResource(
        ResourceType.GROUP, "g", incremental_configs=[entry("consumer.session.timeout.ms", "50000")]
    )
    alter(group)
    described = admin.describe_configs([ConfigResource(ResourceType.GROUP, "g")])
    (entries,) = [f.result(20) for f in described.values()]
    assert entries["consumer.session.timeout.ms"].value == "50000"
    assert entries["consumer.session.timeout.ms"].source == ConfigSource.GROUP_CONFIG.value

    me = str(broker.config.broker_id)
    alter(
        ConfigResource(
            ResourceType.BROKER, me, incremental_configs=[entry("log.retention.ms", "5000")]
        )
    )
    described = admin.describe_configs([ConfigResource(ResourceType.BROKER, me)])
    (entries,) = [f.result(20) for f in described.values()]
    assert entries["log.retention.ms"].value == "5000"
    assert entries["log.retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert not entries["log.retention.ms"].is_read_only
    with pytest.raises(KafkaException) as refused:
        alter(
            ConfigResource(ResourceType.BROKER, me, incremental_configs=[entry("log.dirs", "/x")])
        )
    assert refused.value.args[0].name() == "INVALID_REQUEST"
