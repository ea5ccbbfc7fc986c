"""The transaction coordinator's settings, with Kafka's names and defaults."""

from __future__ import annotations

from collections.abc import Callable
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

    @classmethod
    def from_settings(cls, get_int: Callable[[str], int]) -> TransactionConfig:
        """From the broker's settings (``BrokerConfig.get_int``)."""
        return cls(
            max_timeout_ms=get_int("transaction.max.timeout.ms"),
            abort_check_interval_ms=get_int(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms"
            ),
            id_expiration_ms=get_int("transactional.id.expiration.ms"),
            expiry_check_interval_ms=get_int(
                "transaction.remove.expired.transaction.cleanup.interval.ms"
            ),
            offsets_partitions=get_int("offsets.topic.num.partitions"),
        )
