"""The part of an append that touches no file.

A producer's batches are validated, checked against the idempotent producers'
state (a batch written already is answered as a duplicate, not written again),
and their offsets stamped into a copy of the payload. Once the copy is written,
``record_producers`` makes the producers' state follow.
"""

from __future__ import annotations

from typing import NamedTuple

from kgroups.storage.batch_validation import assign_offsets, validate_batches
from kgroups.storage.config import LogConfig
from kgroups.storage.producer_state import BatchMetadata, ProducerEntry, ProducerStateManager
from kgroups.storage.records import BatchHeader, BatchMeta

__all__ = ["AppendResult", "StampedBatches", "duplicate_result", "record_producers", "stamp"]

# Building a NamedTuple straight from a tuple skips its generated __new__ (once
# per append, on the produce path).
_new_tuple = tuple.__new__


class AppendResult(NamedTuple):
    base_offset: int
    last_offset: int
    log_append_time: int  # -1 for CreateTime topics
    log_start_offset: int
    duplicate: bool = False


class StampedBatches(NamedTuple):
    buf: bytearray  # the batches, offsets stamped, ready to write
    batches: list[tuple[int, BatchHeader]]
    metas: list[BatchMeta]
    # Of several batches, the producers' new entries, to commit once written.
    pending: dict[int, ProducerEntry] | None
    log_append_time: int | None  # None for CreateTime topics


def stamp(
    payload: bytes | bytearray | memoryview,
    config: LogConfig,
    producers: ProducerStateManager,
    first_offset: int,
    leader_epoch: int,
    now_ms: int,
    *,
    from_client: bool,
) -> StampedBatches | BatchMetadata:
    """The batches with offsets from ``first_offset`` on, or the batch already
    written that they duplicate.

    ``from_client=False`` is for the broker's own writes (coordinator records):
    Kafka's producer-only checks and idempotence checks are skipped.
    """
    batches = validate_batches(
        payload,
        max_message_bytes=config.max_message_bytes,
        segment_bytes=config.segment_bytes,
        from_client=from_client,
        require_keys=from_client and config.compact,
    )
    log_append_time = now_ms if config.log_append_time else None
    pending = None
    if from_client:
        if len(batches) == 1:
            header = batches[0][1]
            if header.producer_id >= 0:
                duplicate = producers.check(header)
                if duplicate is not None:
                    return duplicate
        else:
            staged = []
            offset = first_offset
            for _pos, header in batches:
                ts = header.max_timestamp if log_append_time is None else log_append_time
                staged.append((header, offset, ts))
                offset += header.last_offset_delta + 1
            pending, duplicate = producers.check_all(staged)
            if duplicate is not None:
                return duplicate

    buf = bytearray(payload)
    metas = assign_offsets(
        buf,
        batches,
        first_offset,
        partition_leader_epoch=leader_epoch,
        log_append_time=log_append_time,
    )
    return _new_tuple(StampedBatches, (buf, batches, metas, pending, log_append_time))


def record_producers(producers: ProducerStateManager, stamped: StampedBatches) -> None:
    """The batches are written: their producers' state follows."""
    if stamped.pending is not None:
        producers.commit(stamped.pending)
        return
    for (_pos, header), meta in zip(stamped.batches, stamped.metas, strict=True):
        if header.producer_id >= 0:
            producers.update(header, meta[2] - header.last_offset_delta, meta[3])


def duplicate_result(
    batch: BatchMetadata, log_append_time: bool, log_start_offset: int
) -> AppendResult:
    """The answer to a batch written already: where it was written."""
    return AppendResult(
        batch.first_offset,
        batch.last_offset,
        batch.timestamp if log_append_time else -1,
        log_start_offset,
        duplicate=True,
    )
