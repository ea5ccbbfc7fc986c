"""Ending a transaction in a partition log: a commit or abort marker appended
after the producer's records, the transaction completed in the producers' state,
and an abort listed in the aborted transaction index (``txn_index``), where
read_committed fetches find it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Protocol

from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.partitions.stamping import AppendResult
from kgroups.records.control import encode_marker
from kgroups.storage.log_open import aborted_entry
from kgroups.storage.segment import Segment
from kgroups.storage.txn_index import TxnIndex

__all__ = ["MarkedLog", "append_marker"]

log = logging.getLogger(__name__)


class MarkedLog(Protocol):
    """What ending a transaction needs of a log (``SegmentLog``)."""

    directory: Path
    producers: ProducerStateManager
    txn_index: TxnIndex

    @property
    def active_segment(self) -> Segment: ...

    def append(
        self, payload: bytes | bytearray | memoryview, now_ms: int, *, from_client: bool = True
    ) -> AppendResult: ...


def append_marker(
    partition_log: MarkedLog,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    now_ms: int,
) -> int:
    """Append a commit or abort marker ending the producer's transaction; its offset.

    INVALID_PRODUCER_EPOCH for an older producer epoch, TRANSACTION_COORDINATOR_FENCED
    for an older coordinator epoch than the producer's last marker.
    """
    producers = partition_log.producers
    producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
    marker = encode_marker(producer_id, producer_epoch, coordinator_epoch, commit, now_ms)
    offset = partition_log.append(marker, now_ms, from_client=False).base_offset
    done = producers.complete_txn(producer_id, producer_epoch, coordinator_epoch, commit, offset)
    if done.aborted:
        # Read after the append: the marker may have rolled a new segment.
        segment_base = partition_log.active_segment.base_offset
        try:
            partition_log.txn_index.add(aborted_entry(producers, done), segment_base)
        except OSError as exc:
            # The marker is written; opening the log rebuilds the entry from it.
            log.warning(
                "cannot write the aborted transaction index of %s: %s",
                partition_log.directory,
                exc,
            )
    return offset
