"""The part of an append that touches no file.

A producer's batches are validated (their timestamps too, where the topic
bounds them: ``timestamp_bounds``), rebuilt in the topic's codec when its
``compression.type`` names one (``recompression``), checked against the
idempotent producers' state (a batch written already is answered as a
duplicate, not written again), and their offsets stamped into a copy of the
payload, or into the payload itself when it is a writable memoryview (a
Produce request's records, read in place: protocol/produce_request.py). Once
the batches are written, ``record_producers`` makes the producers' state
follow.
"""

from __future__ import annotations

from typing import NamedTuple

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.batch_validation import assign_offsets, validate_batches
from kgroups.partitions.config import LogConfig
from kgroups.partitions.producer_state import BatchMetadata, ProducerEntry, ProducerStateManager
from kgroups.partitions.recompression import recompress_batches
from kgroups.partitions.timestamp_bounds import check_timestamps
from kgroups.records.batch import COMPRESSION_MASK, BatchHeader, BatchMeta
from kgroups.records.compression import NONE

__all__ = [
    "AppendResult",
    "StampedBatches",
    "StampingLog",
    "duplicate_result",
    "record_producers",
    "stamp",
]

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
    buf: bytearray | memoryview  # the batches, offsets stamped, ready to write
    batches: list[tuple[int, BatchHeader]]
    metas: list[BatchMeta]
    # Of several batches, the producers' new entries, to commit once written.
    pending: dict[int, ProducerEntry] | None
    log_append_time: int | None  # None for CreateTime topics


class StampingLog:
    """What a local log (SegmentLog) and a store-backed one (StoreLog) share:
    their batches are stamped alike, only where they are written differs.
    (Not an ABC: ``isinstance`` against an ABCMeta class is slower, and the
    produce path asks it of every append.)"""

    config: LogConfig
    producers: ProducerStateManager
    # Stamped into every appended batch's partitionLeaderEpoch field.
    leader_epoch: int

    @property
    def log_start_offset(self) -> int:
        raise NotImplementedError

    def append(
        self, payload: bytes | bytearray | memoryview, now_ms: int, *, from_client: bool = True
    ) -> AppendResult:
        """Validate, assign offsets and write a producer's batches (see ``stamp``;
        a writable memoryview is stamped in place)."""
        raise NotImplementedError

    def append_batch(self, batch: bytes | bytearray | memoryview, now_ms: int) -> AppendResult:
        """Append batches the broker built itself (coordinator records)."""
        return self.append(batch, now_ms, from_client=False)


def stamp(
    log: StampingLog,
    payload: bytes | bytearray | memoryview,
    first_offset: int,
    now_ms: int,
    *,
    from_client: bool,
) -> StampedBatches | AppendResult:
    """``log``'s next batches, offsets from ``first_offset`` on, or the answer
    to a batch written already that they duplicate.

    ``from_client=False`` is for the broker's own writes (coordinator records):
    Kafka's producer-only checks and idempotence checks are skipped.
    """
    config = log.config
    producers = log.producers
    batches = validate_batches(
        payload,
        max_message_bytes=config.max_message_bytes,
        segment_bytes=config.segment_bytes,
        from_client=from_client,
        require_keys=from_client and config.compact,
    )
    if from_client and len(batches) > 1:
        _check_one_compressed_batch(batches, config)
    if from_client and config.timestamps_bounded:
        check_timestamps(
            payload,
            batches,
            now_ms,
            before_max_ms=config.message_timestamp_before_max_ms,
            after_max_ms=config.message_timestamp_after_max_ms,
        )
    if from_client and config.recompress is not None:
        payload, batches = recompress_batches(
            payload,
            batches,
            *config.recompress,
            max_message_bytes=config.max_message_bytes,
            segment_bytes=config.segment_bytes,
        )
    log_append_time = now_ms if config.log_append_time else None
    pending = None
    if from_client:
        if len(batches) == 1:
            header = batches[0][1]
            if header.producer_id >= 0:
                duplicate = producers.check(header)
                if duplicate is not None:
                    return duplicate_result(duplicate, config.log_append_time, log.log_start_offset)
        else:
            staged = []
            offset = first_offset
            for _pos, header in batches:
                ts = header.max_timestamp if log_append_time is None else log_append_time
                staged.append((header, offset, ts))
                offset += header.last_offset_delta + 1
            pending, duplicate = producers.check_all(staged)
            if duplicate is not None:
                return duplicate_result(duplicate, config.log_append_time, log.log_start_offset)

    # A writable view is the caller's frame (a Produce read in place): the
    # offsets go where the batches lie. Anything else is copied first.
    buf = (
        payload if isinstance(payload, memoryview) and not payload.readonly else bytearray(payload)
    )
    metas = assign_offsets(
        buf,
        batches,
        first_offset,
        partition_leader_epoch=log.leader_epoch,
        log_append_time=log_append_time,
    )
    return _new_tuple(StampedBatches, (buf, batches, metas, pending, log_append_time))


def _check_one_compressed_batch(batches: list[tuple[int, BatchHeader]], config: LogConfig) -> None:
    """Kafka takes several batches in one partition's payload only when none
    is compressed and the topic stores them uncompressed (or as produced)."""
    stored = config.recompress[0] if config.recompress is not None else NONE
    if stored != NONE or any(header.attributes & COMPRESSION_MASK for _pos, header in batches):
        raise KafkaError(
            ErrorCode.invalid_record, "Compressed outer record has more than one batch"
        )


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
