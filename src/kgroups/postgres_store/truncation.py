"""Moving a partition log's start forward: DeleteRecords and retention.

Only the leader moves it, fenced like an append (same leader epoch, lease and
row lock), so a replaced leader's retention cannot race the new one's appends.
Batches wholly below the new start are deleted; a batch straddling it stays,
and reads skip what lies before the start, as Kafka does within a segment.
So are the aborted transactions whose marker is below it (Kafka deletes a
segment's ``.txnindex`` with it).
"""

from __future__ import annotations

from kgroups.errors import ErrorCode, KafkaError
from kgroups.postgres_store.aborted_txns import delete_aborted
from kgroups.postgres_store.fencing import FENCE, Writer, refusal
from kgroups.postgres_store.reads import partition_offsets
from kgroups.postgres_store.store import Cur, Store


def advance_log_start(
    store: Store, writer: Writer, topic: str, partition: int, leader_epoch: int, offset: int
) -> int:
    """Make ``offset`` the log start (never moving it back); returns the start.
    Beyond the log end it is OFFSET_OUT_OF_RANGE, as DeleteRecords answers."""

    def work(cur: Cur) -> int:
        cur.execute(
            f"""UPDATE kgroups_partitions p
                SET log_start_offset = GREATEST(p.log_start_offset, %(offset)s)
                FROM kgroups_topics t, kgroups_brokers b
                WHERE t.name = %(topic)s AND p.topic_id = t.topic_id
                    AND p.partition = %(partition)s AND p.leader_epoch = %(epoch)s
                    AND {FENCE}
                RETURNING p.topic_id, p.log_start_offset, p.next_offset""",
            writer.params(
                store, topic=topic, partition=partition, epoch=leader_epoch, offset=offset
            ),
        )
        row = cur.fetchone()
        if row is None:
            raise refusal(cur, store, writer, topic, partition)
        topic_id, start, end = row[0], int(row[1]), int(row[2])
        if start > end:
            # Rolled back by raising: nothing of this transaction stays.
            raise KafkaError(ErrorCode.offset_out_of_range, f"{offset} is beyond the log end {end}")
        cur.execute(
            "DELETE FROM kgroups_batches WHERE topic_id = %s AND partition = %s"
            " AND last_offset < %s",
            (topic_id, partition, start),
        )
        delete_aborted(cur, topic_id, partition, below=start)
        return start

    return store.transaction(work)


def retention_start(
    store: Store, topic: str, partition: int, *, cutoff_ms: int, retention_bytes: int
) -> int | None:
    """The log start that retention asks for, or None if nothing has expired.

    Time: the first batch (in offset order) whose newest record is at or after
    ``cutoff_ms`` starts the retained log; everything before it goes, as Kafka
    deletes segments from the oldest until the first one that has not expired.
    Size (``retention_bytes`` >= 0): the oldest batches go until the rest fits.
    """

    def work(cur: Cur) -> int | None:
        topic_id, offsets = partition_offsets(cur, topic, partition)
        start, end = offsets.log_start_offset, offsets.high_watermark
        cur.execute(
            """SELECT min(base_offset) FROM kgroups_batches
               WHERE topic_id = %s AND partition = %s AND max_timestamp >= %s""",
            (topic_id, partition, cutoff_ms),
        )
        found = cur.fetchone()
        by_time = end if found is None or found[0] is None else int(found[0])
        by_size = start
        if retention_bytes >= 0:
            cur.execute(
                """SELECT min(base_offset) FROM (
                       SELECT base_offset,
                              sum(length(batch)) OVER (ORDER BY base_offset DESC) AS kept
                       FROM kgroups_batches WHERE topic_id = %s AND partition = %s
                   ) AS tail WHERE kept <= %s""",
                (topic_id, partition, retention_bytes),
            )
            found = cur.fetchone()
            by_size = end if found is None or found[0] is None else int(found[0])
        wanted = max(by_time, by_size)
        return wanted if wanted > start else None

    return store.transaction(work)
