"""Coordinator settings, under Kafka's names and with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    # group.min.session.timeout.ms
    min_session_timeout_ms: int = 6_000
    # group.max.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000
    # group.initial.rebalance.delay.ms
    initial_rebalance_delay_ms: int = 3_000
    # group.max.size
    max_size: int = 2_147_483_647
    # offsets.topic.num.partitions
    offsets_topic_partitions: int = 50
    # offset.metadata.max.bytes
    offset_metadata_max_bytes: int = 4_096
    # offsets.retention.minutes (10080), kept in milliseconds
    offsets_retention_ms: int = 10_080 * 60_000
    # offsets.retention.check.interval.ms
    offsets_retention_check_interval_ms: int = 600_000
