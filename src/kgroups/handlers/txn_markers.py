"""Writing transaction markers: the one path commit and abort markers take into
the partitions led here, whether sent by another broker's transaction
coordinator (WriteTxnMarkers) or by the coordinator in this process
(marker_routes).

A marker ends a producer's transaction on one partition (``append_marker``).
Partitions of ``__consumer_offsets`` belong to the group coordinator: it has
the partition's log write the marker the same way, in order with its own
records, and once the marker is durable it applies or drops the
transaction's offsets.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgroups.errors import ErrorCode, KafkaError
from kgroups.topics.placement import OFFSETS_TOPIC

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

__all__ = ["TxnMarker", "write_txn_markers"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TxnMarker:
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: tuple[tuple[str, int], ...]  # (topic, partition)


async def write_txn_markers(
    broker: BrokerApi, markers: list[TxnMarker]
) -> list[dict[tuple[str, int], ErrorCode]]:
    """Write each marker to its partitions; per marker, each partition's error code."""
    results: list[dict[tuple[str, int], ErrorCode]] = []
    for marker in markers:
        errors: dict[tuple[str, int], ErrorCode] = {}
        for topic, partition in marker.partitions:
            if topic == OFFSETS_TOPIC:
                errors[(topic, partition)] = await _complete_offsets(broker, marker, partition)
            else:
                errors[(topic, partition)] = await _append(broker, marker, topic, partition)
        results.append(errors)
    return results


async def _append(broker: BrokerApi, marker: TxnMarker, topic: str, partition: int) -> ErrorCode:
    try:
        plog = broker.partitions.log(topic, partition)
        plog.append_marker(
            marker.producer_id,
            marker.producer_epoch,
            marker.coordinator_epoch,
            marker.commit,
            broker.clock.now_ms(),
        )
    except KafkaError as e:
        return e.error_code
    flushed = broker.partitions.appended(topic, partition, plog)
    if flushed is not None:
        try:
            await flushed
        except KafkaError as e:
            return e.error_code
        except Exception as e:  # a failed fsync: the log is offline
            log.error("transaction marker for %s-%d not flushed: %s", topic, partition, e)
            return ErrorCode.kafka_storage_error
    return ErrorCode.none


async def _complete_offsets(broker: BrokerApi, marker: TxnMarker, partition: int) -> ErrorCode:
    coordinator: Any = broker.coordinator
    complete = getattr(coordinator, "complete_transaction", None)
    if complete is None:
        # Transactional offset commits are not served yet: no marker to write.
        return ErrorCode.unknown_server_error
    error: ErrorCode = await complete(
        partition,
        marker.producer_id,
        marker.producer_epoch,
        marker.coordinator_epoch,
        marker.commit,
    )
    return error
