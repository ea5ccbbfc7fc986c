"""The limits of a share partition, Kafka's broker settings and defaults."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_RECORD_LOCK_DURATION_MS = 30_000
DEFAULT_DELIVERY_COUNT_LIMIT = 5
DEFAULT_PARTITION_MAX_RECORD_LOCKS = 2000


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    record_lock_duration_ms: int = DEFAULT_RECORD_LOCK_DURATION_MS
    """``group.share.record.lock.duration.ms``: how long an acquired record
    stays with its member before it is offered again."""
    delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT
    """``group.share.delivery.count.limit``: deliveries a record gets; one
    whose last delivery ends unacknowledged is archived."""
    max_record_locks: int = DEFAULT_PARTITION_MAX_RECORD_LOCKS
    """``group.share.partition.max.record.locks``: in-flight records (from the
    start offset to the last fetched one) past which no new records are
    acquired."""
