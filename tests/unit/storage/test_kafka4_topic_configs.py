"""Kafka 4.x topic configs beyond those kgroups' logs act on: compression,
timestamp bounds, and the keys accepted and described with no effect."""

from __future__ import annotations

import pytest

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.records.compression import GZIP, LZ4, NONE, ZSTD


@pytest.mark.parametrize(
    ("overrides", "recompress"),
    [
        ({}, None),
        ({"compression.type": "producer"}, None),
        ({"compression.type": "uncompressed"}, (NONE, 0)),
        ({"compression.type": " zstd "}, (ZSTD, 3)),
        ({"compression.type": "zstd", "compression.zstd.level": "-5"}, (ZSTD, -5)),
        ({"compression.type": "gzip"}, (GZIP, -1)),
        ({"compression.type": "lz4", "compression.lz4.level": "17"}, (LZ4, 17)),
    ],
)
def test_compression_type_names_the_stored_codec(
    overrides: dict[str, str], recompress: tuple[int, int] | None
) -> None:
    assert LogConfig().with_overrides(overrides).recompress == recompress


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("compression.type", "none"),
        ("compression.type", "ZSTD"),
        ("compression.type", "brotli"),
        ("compression.gzip.level", "0"),
        ("compression.gzip.level", "10"),
        ("compression.lz4.level", "0"),
        ("compression.lz4.level", "18"),
        ("compression.zstd.level", "23"),
        ("compression.zstd.level", "-131073"),
        ("file.delete.delay.ms", "-1"),
        ("segment.jitter.ms", "-1"),
        ("preallocate", "yes"),
        ("min.insync.replicas", "0"),
        ("unclean.leader.election.enable", "1"),
        ("follower.replication.throttled.replicas", "0-1"),
        ("leader.replication.throttled.replicas", "*,0:1"),
        ("local.retention.ms", "-3"),
        ("message.timestamp.before.max.ms", "-1"),
        ("message.timestamp.after.max.ms", "x"),
        ("remote.storage.enable", "true"),
        ("message.downconversion.enable", "maybe"),
        # Removed in Kafka 4.0: unknown names now.
        ("message.format.version", "3.0-IV1"),
        ("message.timestamp.difference.max.ms", "1000"),
    ],
)
def test_bad_values_are_invalid_config(key: str, value: str) -> None:
    with pytest.raises(KafkaError) as exc:
        LogConfig().with_overrides({key: value})
    assert exc.value.error_code == ErrorCode.invalid_config
    assert key in str(exc.value)


def test_no_effect_keys_are_kept_and_printed_as_kafka_does() -> None:
    c = LogConfig().with_overrides(
        {
            "file.delete.delay.ms": "1000",
            "preallocate": "TRUE",
            "follower.replication.throttled.replicas": " 0:1 , 1:2",
            "leader.replication.throttled.replicas": "*",
            "segment.jitter.ms": "5",
            "remote.storage.enable": "false",
            "local.retention.bytes": "-2",
        }
    )
    printed = c.to_topic_configs()
    assert printed["file.delete.delay.ms"] == "1000"
    assert printed["preallocate"] == "true"
    assert printed["follower.replication.throttled.replicas"] == "0:1,1:2"
    assert printed["leader.replication.throttled.replicas"] == "*"
    assert printed["segment.jitter.ms"] == "5"
    assert LogConfig().with_overrides(printed) == c


def test_broker_defaults_of_the_new_keys() -> None:
    c = LogConfig.from_broker_config(
        {
            "compression.type": "snappy",
            "log.segment.delete.delay.ms": "5",
            "log.roll.jitter.hours": "2",
            "log.preallocate": "true",
            "log.message.timestamp.after.max.ms": "3600000",
        }
    )
    assert c.compression_type == "snappy" and c.file_delete_delay_ms == 5
    assert c.segment_jitter_ms == 2 * 3_600_000 and c.preallocate
    assert c.message_timestamp_after_max_ms == 3_600_000
