"""A coordinator's appends as log batches: records of several results share a
batch, a transactional append (offsets of a transaction) is a batch of its
own with its producer, and a transaction's marker goes through the log's
marker path, as on any partition."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.log import PartitionLog
from kgroups.records.batch import encode_batch, encode_keyed_batch
from kgroups.runtime.coordinator_driver import Append

__all__ = ["append_marker", "encoded_batches"]

log = logging.getLogger(__name__)

# Records of several results share a log batch up to this size, below the
# 1 MiB a batch of `__consumer_offsets` may have.
_BATCH_BYTES = 512 * 1024


def encoded_batches(appends: list[Append], now: int) -> Sequence[tuple[list[Append], bytes | None]]:
    """The appends' records as log batches, in order. A transactional append
    (offsets of a transaction, or its marker) is a batch of its own, with its
    producer; the others share batches (``_shared``). A marker has no bytes
    here (None): the log writes it (``append_marker``)."""
    if all(append.producer is None for append in appends):
        return _shared(appends, now)
    out: list[tuple[list[Append], bytes | None]] = []
    run: list[Append] = []
    for append in appends:
        producer = append.producer
        if producer is None:
            run.append(append)
            continue
        if run:
            out += _shared(run, now)
            run = []
        if producer.marker is not None:
            out.append(([append], None))
            continue
        batch = encode_batch(
            [(k, v, (), now) for k, v in append.records],
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            is_transactional=True,
        )
        out.append(([append], batch))
    if run:
        out += _shared(run, now)
    return out


def _shared(appends: list[Append], now: int) -> list[tuple[list[Append], bytes]]:
    """Plain appends' records: one batch, unless it would pass _BATCH_BYTES;
    then halves, down to one append per batch."""
    batch = encode_keyed_batch([record for append in appends for record in append.records], now)
    if len(batch) <= _BATCH_BYTES or len(appends) == 1:
        return [(appends, batch)]
    half = len(appends) // 2
    return _shared(appends[:half], now) + _shared(appends[half:], now)


def append_marker(plog: PartitionLog, append: Append, now: int) -> ErrorCode | None:
    """Write a transaction's marker through the log's marker path, as on
    any partition: the log ends the transaction in its producer state
    (last stable offset, aborted transactions). None once written, else
    the error of a marker the log refused (an older producer or
    coordinator epoch, a failed write). It fails alone: the shard applies
    a marker only once durable, so no later append builds on it."""
    producer = append.producer
    assert producer is not None and producer.marker is not None
    try:
        plog.append_marker(
            producer.producer_id,
            producer.producer_epoch,
            producer.marker.coordinator_epoch,
            producer.marker.commit,
            now,
        )
    except KafkaError as e:
        log.info("transaction marker refused: %s", e)
        return e.error_code
    return None
