"""The transaction coordinator's settings, with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    # transaction.max.timeout.ms: a longer transaction.timeout.ms is refused.
    max_timeout_ms: int = 900_000
    # transaction.abort.timed.out.transaction.cleanup.interval.ms
    abort_check_interval_ms: int = 10_000
    # transactional.id.expiration.ms
    id_expiration_ms: int = 604_800_000
    # transaction.remove.expired.transaction.cleanup.interval.ms
    expiry_check_interval_ms: int = 3_600_000
    # offsets.topic.num.partitions: where AddOffsetsToTxn's group commits.
    offsets_partitions: int = 50
    # Pause before markers or a Complete record that failed are written again.
    retry_backoff_ms: int = 100
