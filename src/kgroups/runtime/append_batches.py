"""A coordinator's appends as log batches: records of several results share a
batch, a transactional append (offsets of a transaction, or its marker) is a
batch of its own with its producer."""

from __future__ import annotations

from kgroups.records.batch import encode_batch
from kgroups.runtime.coordinator_driver import Append

__all__ = ["encoded_batches"]

# Records of several results share a log batch up to this size, below the
# 1 MiB a batch of `__consumer_offsets` may have.
_BATCH_BYTES = 512 * 1024


def encoded_batches(appends: list[Append], now: int) -> list[tuple[list[Append], bytes]]:
    """The appends' records as log batches, in order. A transactional append
    (offsets of a transaction, or its marker) is a batch of its own, with its
    producer; the others share batches (``_shared``)."""
    if all(append.producer is None for append in appends):
        return _shared(appends, now)
    out: list[tuple[list[Append], bytes]] = []
    run: list[Append] = []
    for append in appends:
        producer = append.producer
        if producer is None:
            run.append(append)
            continue
        if run:
            out += _shared(run, now)
            run = []
        batch = encode_batch(
            [(k, v, (), now) for k, v in append.records],
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            is_transactional=True,
            is_control=producer.control,
        )
        out.append(([append], batch))
    if run:
        out += _shared(run, now)
    return out


def _shared(appends: list[Append], now: int) -> list[tuple[list[Append], bytes]]:
    """Plain appends' records: one batch, unless it would pass _BATCH_BYTES;
    then halves, down to one append per batch."""
    batch = encode_batch([(k, v, (), now) for append in appends for k, v in append.records])
    if len(batch) <= _BATCH_BYTES or len(appends) == 1:
        return [(appends, batch)]
    half = len(appends) // 2
    return _shared(appends[:half], now) + _shared(appends[half:], now)
