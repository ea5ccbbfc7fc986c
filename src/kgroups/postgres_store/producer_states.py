"""Idempotent producers' state of partitions kept in the cluster store.

A leader checks each producer's batches against the producer's last five
batches (``partitions/producer_state.py``); a new leader must know them too, or a
producer's retry of an acknowledged batch, sent to it after a change of
leader, would be written a second time. So every append transaction also
writes, for each producer it carries, one row per partition: the producer's
epoch and last batches as they are once the append is in (an upsert, keyed by
partition and producer id). The row commits with the batches or not at all,
so the state a new leader reads is exactly its log's. A leader reads the rows
once, when it gains the partition.

A row also holds the first offset of the producer's open transaction (-1 when
none) and the coordinator epoch of its last marker: a new leader rebuilds the
ongoing transactions from them (its last stable offset), and refuses a marker
from an older transaction coordinator.

Rows of producers idle for ``producer.id.expiration.ms`` are deleted by the
leader's retention pass, as a local log forgets them; never the row of a
producer whose transaction is open.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from kgroups.partitions.producer_state import BatchMetadata, ProducerEntry, ProducerStateManager
from kgroups.postgres_store.store import Cur

# first sequence, last sequence, first offset, last offset, timestamp
_BATCH = struct.Struct(">iiqqq")

# producer id, producer epoch, last timestamp, packed batches, coordinator
# epoch, open transaction's first offset
ProducerRow = tuple[int, int, int, bytes, int, int]


def producer_row(entry: ProducerEntry) -> ProducerRow:
    packed = b"".join(_BATCH.pack(*batch) for batch in entry.batches)
    return (
        entry.producer_id,
        entry.epoch,
        entry.last_timestamp,
        packed,
        entry.coordinator_epoch,
        entry.txn_first_offset,
    )


def entry_of(
    producer_id: int,
    epoch: int,
    packed: bytes,
    coordinator_epoch: int = -1,
    txn_first_offset: int = -1,
) -> ProducerEntry:
    entry = ProducerEntry(producer_id, epoch)
    for at in range(0, len(packed), _BATCH.size):
        entry.batches.append(BatchMetadata._make(_BATCH.unpack_from(packed, at)))
    entry.coordinator_epoch = coordinator_epoch
    entry.txn_first_offset = txn_first_offset
    return entry


# Upserts the rows of ``producer_columns``: at most one per producer and partition.
UPSERT = """INSERT INTO kgroups_producers
        (topic_id, partition, producer_id, producer_epoch, last_timestamp, batches,
         coordinator_epoch, txn_first_offset)
    SELECT * FROM unnest(%b::uuid[], %b::int[], %b::bigint[], %b::smallint[],
                         %b::bigint[], %b::bytea[], %b::int[], %b::bigint[])
    ON CONFLICT (topic_id, partition, producer_id) DO UPDATE
        SET producer_epoch = EXCLUDED.producer_epoch,
            last_timestamp = EXCLUDED.last_timestamp,
            batches = EXCLUDED.batches,
            coordinator_epoch = EXCLUDED.coordinator_epoch,
            txn_first_offset = EXCLUDED.txn_first_offset"""


def producer_columns(rows: Sequence[tuple[object, int, ProducerRow]]) -> list[list[object]]:
    """``UPSERT``'s parameters for ``(topic id, partition, row)``s."""
    return [
        [r[0] for r in rows],
        [r[1] for r in rows],
        [r[2][0] for r in rows],
        [r[2][1] for r in rows],
        [r[2][2] for r in rows],
        [r[2][3] for r in rows],
        [r[2][4] for r in rows],
        [r[2][5] for r in rows],
    ]


def read_producers(
    cur: Cur, partitions: Iterable[tuple[str, int]]
) -> dict[tuple[str, int], ProducerStateManager]:
    """The producers' state of each partition (an empty one for a partition without)."""
    wanted = list(partitions)
    states = {tp: ProducerStateManager() for tp in wanted}
    if not wanted:
        return states
    cur.execute(
        """SELECT t.name, r.partition, r.producer_id, r.producer_epoch, r.batches,
                  r.coordinator_epoch, r.txn_first_offset
           FROM unnest(%b::text[], %b::int[]) AS v(name, part)
           JOIN kgroups_topics t ON t.name = v.name
           JOIN kgroups_producers r ON r.topic_id = t.topic_id AND r.partition = v.part""",
        [[tp[0] for tp in wanted], [tp[1] for tp in wanted]],
    )
    for name, partition, producer_id, epoch, packed, coordinator_epoch, txn_first in cur.fetchall():
        entry = entry_of(
            int(producer_id), int(epoch), bytes(packed), int(coordinator_epoch), int(txn_first)
        )
        state = states[(name, int(partition))]
        state.producers[entry.producer_id] = entry
        if entry.txn_first_offset >= 0:
            state.ongoing[entry.producer_id] = entry.txn_first_offset
    return states


def expire_producers(cur: Cur, topic: str, partition: int, before_ms: int) -> int:
    """Delete the rows of producers whose last batch is older than ``before_ms``
    and that have no transaction open (it would never end: Kafka keeps them)."""
    cur.execute(
        """DELETE FROM kgroups_producers
           WHERE topic_id = (SELECT topic_id FROM kgroups_topics WHERE name = %s)
               AND partition = %s AND last_timestamp < %s AND txn_first_offset < 0""",
        (topic, partition, before_ms),
    )
    return cur.rowcount
