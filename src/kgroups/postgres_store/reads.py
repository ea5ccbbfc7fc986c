"""Reading partition logs from the cluster store: Fetch and ListOffsets.

Only committed appends are visible, and an append commits only once its
batches are in the store, so the log end (``next_offset``) is also the high
watermark: everything below it survives the loss of any broker.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroups.errors import ErrorCode, KafkaError
from kgroups.postgres_store.errors import UnknownPartition
from kgroups.postgres_store.store import Cur, Store

# Rows asked for by the first query of a read, doubled for each following one:
# a fetch of a few batches costs one round trip, a big one a few.
_FIRST_ROWS = 16


@dataclass(frozen=True, slots=True)
class LogOffsets:
    log_start_offset: int
    high_watermark: int  # the log end: the next offset to be written
    clean_offset: int = 0  # where log compaction goes on from


@dataclass(frozen=True, slots=True)
class ReadResult:
    batches: list[bytes]
    offsets: LogOffsets


def log_offsets(store: Store, topic: str, partition: int) -> LogOffsets:
    return store.transaction(lambda cur: partition_offsets(cur, topic, partition)[1])


def read(
    store: Store,
    topic: str,
    partition: int,
    offset: int,
    max_bytes: int,
    max_offset: int | None = None,
    *,
    min_one: bool = True,
) -> ReadResult:
    """Batches from the one holding ``offset``, up to ``max_bytes`` (with
    ``min_one``, at least one batch, as Kafka returns an oversized first batch
    whole), and only those
    starting below ``max_offset`` (the last stable offset of a read_committed
    fetch)."""

    def work(cur: Cur) -> ReadResult:
        topic_id, offsets = partition_offsets(cur, topic, partition)
        if not offsets.log_start_offset <= offset <= offsets.high_watermark:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"offset {offset} outside [{offsets.log_start_offset}, "
                f"{offsets.high_watermark}] of {topic}-{partition}",
            )
        batches: list[bytes] = []
        size = 0
        rows = _FIRST_ROWS
        position = offset
        end = offsets.high_watermark if max_offset is None else max_offset
        while True:
            cur.execute(
                """SELECT last_offset, batch FROM kgroups_batches
                   WHERE topic_id = %s AND partition = %s AND last_offset >= %s
                       AND base_offset < %s
                   ORDER BY base_offset LIMIT %s""",
                (topic_id, partition, position, end, rows),
            )
            found = cur.fetchall()
            for last, batch in found:
                if (batches or not min_one) and size + len(batch) > max_bytes:
                    return ReadResult(batches, offsets)
                batches.append(bytes(batch))
                size += len(batch)
                position = int(last) + 1
            if len(found) < rows or size >= max_bytes:
                return ReadResult(batches, offsets)
            rows *= 2

    return store.transaction(work)


def batch_at_timestamp(store: Store, topic: str, partition: int, timestamp_ms: int) -> bytes | None:
    """The first batch holding a record with a timestamp at or after
    ``timestamp_ms`` (ListOffsets by time; the caller finds the record in it)."""

    def work(cur: Cur) -> bytes | None:
        topic_id, offsets = partition_offsets(cur, topic, partition)
        cur.execute(
            """SELECT batch FROM kgroups_batches
               WHERE topic_id = %s AND partition = %s AND max_timestamp >= %s
                   AND last_offset >= %s
               ORDER BY base_offset LIMIT 1""",
            (topic_id, partition, timestamp_ms, offsets.log_start_offset),
        )
        row = cur.fetchone()
        return None if row is None else bytes(row[0])

    return store.transaction(work)


def max_timestamp_batch(store: Store, topic: str, partition: int) -> bytes | None:
    """The batch holding the partition's largest timestamp (ListOffsets -3)."""

    def work(cur: Cur) -> bytes | None:
        cur.execute(
            """SELECT b.batch FROM kgroups_batches b
               JOIN kgroups_topics t ON t.topic_id = b.topic_id
               JOIN kgroups_partitions p ON p.topic_id = b.topic_id AND p.partition = b.partition
               WHERE t.name = %s AND b.partition = %s AND b.last_offset >= p.log_start_offset
               ORDER BY b.max_timestamp DESC, b.base_offset LIMIT 1""",
            (topic, partition),
        )
        row = cur.fetchone()
        return None if row is None else bytes(row[0])

    return store.transaction(work)


def partition_offsets(cur: Cur, topic: str, partition: int) -> tuple[object, LogOffsets]:
    """The partition's topic id and its log start, end and clean offsets."""
    cur.execute(
        """SELECT p.topic_id, p.log_start_offset, p.next_offset, p.clean_offset
           FROM kgroups_partitions p
           JOIN kgroups_topics t ON t.topic_id = p.topic_id
           WHERE t.name = %s AND p.partition = %s""",
        (topic, partition),
    )
    row = cur.fetchone()
    if row is None:
        raise UnknownPartition(topic, partition)
    return row[0], LogOffsets(int(row[1]), int(row[2]), int(row[3]))
