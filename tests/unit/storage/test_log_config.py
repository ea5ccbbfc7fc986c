"""Topic configs: Kafka's names, defaults, validation and printing."""

from __future__ import annotations

import pytest

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import TOPIC_CONFIG_KEYS, LogConfig


def test_defaults_are_kafkas() -> None:
    c = LogConfig()
    assert c.to_topic_configs() == {
        "segment.bytes": "1073741824",
        "segment.ms": "604800000",
        "retention.ms": "604800000",
        "retention.bytes": "-1",
        "index.interval.bytes": "4096",
        "segment.index.bytes": "10485760",
        "flush.messages": "9223372036854775807",
        "flush.ms": "9223372036854775807",
        "cleanup.policy": "delete",
        "message.timestamp.type": "CreateTime",
        "max.message.bytes": "1048588",
        "delete.retention.ms": "86400000",
        "min.cleanable.dirty.ratio": "0.5",
        "min.compaction.lag.ms": "0",
        "max.compaction.lag.ms": "9223372036854775807",
        "compression.type": "producer",
        "compression.gzip.level": "-1",
        "compression.lz4.level": "9",
        "compression.zstd.level": "3",
        "message.timestamp.before.max.ms": "9223372036854775807",
        "message.timestamp.after.max.ms": "9223372036854775807",
        "segment.jitter.ms": "0",
        "file.delete.delay.ms": "60000",
        "preallocate": "false",
        "min.insync.replicas": "1",
        "unclean.leader.election.enable": "false",
        "leader.replication.throttled.replicas": "",
        "follower.replication.throttled.replicas": "",
        "remote.storage.enable": "false",
        "local.retention.ms": "-2",
        "local.retention.bytes": "-2",
        "remote.log.copy.disable": "false",
        "remote.log.delete.on.disable": "false",
        "message.downconversion.enable": "true",
    }
    assert set(c.to_topic_configs()) == TOPIC_CONFIG_KEYS
    assert c.delete and not c.compact and not c.log_append_time


def test_overrides_parse_and_round_trip() -> None:
    c = LogConfig().with_overrides(
        {
            "segment.bytes": " 1048576 ",
            "retention.ms": "-1",
            "cleanup.policy": "compact, delete",
            "message.timestamp.type": "LogAppendTime",
            "min.cleanable.dirty.ratio": "0.25",
        }
    )
    assert c.segment_bytes == 1048576 and c.retention_ms == -1
    assert c.compact and c.delete and c.log_append_time
    assert c.min_cleanable_dirty_ratio == 0.25
    assert c.overridden == {
        "segment.bytes",
        "retention.ms",
        "cleanup.policy",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
    }
    again = LogConfig().with_overrides(c.to_topic_configs())
    assert again == c


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("segment.bytes", "abc"),
        ("segment.bytes", "3"),
        ("segment.bytes", str(2**31)),
        ("segment.ms", "0"),
        ("retention.ms", "-2"),
        ("retention.bytes", "1.5"),
        ("flush.messages", "0"),
        ("cleanup.policy", "compress"),
        ("cleanup.policy", ""),
        ("message.timestamp.type", "WallTime"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("min.cleanable.dirty.ratio", "nan"),
        ("max.message.bytes", "-1"),
        ("no.such.config", "1"),
    ],
)
def test_bad_values_are_invalid_config(key: str, value: str) -> None:
    with pytest.raises(KafkaError) as exc:
        LogConfig().with_overrides({key: value})
    assert exc.value.error_code == ErrorCode.invalid_config
    assert key in str(exc.value)


def test_broker_config_names_and_unit_fallbacks() -> None:
    c = LogConfig.from_broker_config(
        {
            "log.segment.bytes": "1000000",
            "log.roll.hours": "2",
            "log.retention.hours": "1",
            "log.retention.minutes": "5",
            "log.cleanup.policy": "compact",
            "message.max.bytes": "2000",
        }
    )
    assert c.segment_bytes == 1000000
    assert c.segment_ms == 2 * 3_600_000
    assert c.retention_ms == 5 * 60_000
    assert c.compact and c.max_message_bytes == 2000
    assert LogConfig.from_broker_config({"log.retention.ms": "-5"}).retention_ms == -1
    assert LogConfig.from_broker_config({"log.retention.hours": "-1"}).retention_ms == -1
    assert (
        LogConfig.from_broker_config(
            {"log.retention.ms": "10", "log.retention.hours": "1"}
        ).retention_ms
        == 10
    )
