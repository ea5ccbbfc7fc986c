"""The aborted transaction index of partitions kept in the cluster store.

Kafka keeps it in each segment's ``.txnindex``; here it is the table
``kgroups_aborted_txns``, one row per abort marker: the producer id, the
transaction's first offset, the marker's offset (its last offset) and the
last stable offset just after the abort. A row is inserted in the same
transaction as the marker's batch (``appends``), so the index holds exactly
the aborts the log holds. Retention deletes the rows of transactions wholly
before the new log start; compaction deletes a row with its marker.

A read_committed fetch is told the aborted transactions that overlap what it
reads: those whose marker is at or after the fetch offset and whose first
offset is below the end of what was read. As Kafka's index search does, the
scan stops at the first entry whose last stable offset reaches that end: no
transaction aborted later can have begun before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kgroups.postgres_store.reads import partition_offsets
from kgroups.postgres_store.store import Cur, Store

__all__ = [
    "INSERT",
    "AbortedTxn",
    "aborted_columns",
    "aborted_in",
    "aborted_transactions",
    "delete_aborted",
]


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int  # the abort marker's
    last_stable_offset: int  # the LSO just after the abort


_LONG_MAX = 2**63 - 1

# Rows of ``aborted_columns``; a marker is written once (its offset is the key).
INSERT = """INSERT INTO kgroups_aborted_txns
        (topic_id, partition, producer_id, first_offset, last_offset, last_stable_offset)
    SELECT * FROM unnest(%b::uuid[], %b::int[], %b::bigint[], %b::bigint[], %b::bigint[],
                         %b::bigint[])"""


def aborted_columns(rows: Sequence[tuple[object, int, AbortedTxn]]) -> list[list[object]]:
    """``INSERT``'s parameters for ``(topic id, partition, entry)``s."""
    return [
        [r[0] for r in rows],
        [r[1] for r in rows],
        [r[2].producer_id for r in rows],
        [r[2].first_offset for r in rows],
        [r[2].last_offset for r in rows],
        [r[2].last_stable_offset for r in rows],
    ]


def aborted_in(
    cur: Cur, topic_id: object, partition: int, start: int, end: int
) -> list[AbortedTxn]:
    """The aborted transactions overlapping offsets [start, end), by marker offset."""
    cur.execute(
        """SELECT producer_id, first_offset, last_offset, last_stable_offset
           FROM kgroups_aborted_txns
           WHERE topic_id = %(topic_id)s AND partition = %(partition)s
               AND last_offset >= %(start)s AND first_offset < %(end)s
               AND last_offset <= COALESCE(
                   (SELECT min(last_offset) FROM kgroups_aborted_txns
                    WHERE topic_id = %(topic_id)s AND partition = %(partition)s
                        AND last_offset >= %(start)s AND last_stable_offset >= %(end)s),
                   %(no_stop)s)
           ORDER BY last_offset""",
        {
            "topic_id": topic_id,
            "partition": partition,
            "start": start,
            "end": end,
            "no_stop": _LONG_MAX,
        },
    )
    return [AbortedTxn(*(int(v) for v in row)) for row in cur.fetchall()]


def aborted_transactions(
    store: Store, topic: str, partition: int, start: int, end: int
) -> list[tuple[int, int]]:
    """(producer id, first offset) of the aborted transactions overlapping
    [start, end), for a read_committed fetch of older offsets."""

    def work(cur: Cur) -> list[tuple[int, int]]:
        topic_id, _offsets = partition_offsets(cur, topic, partition)
        return [
            (e.producer_id, e.first_offset)
            for e in aborted_in(cur, topic_id, partition, start, end)
        ]

    return store.transaction(work)


def delete_aborted(
    cur: Cur, topic_id: object, partition: int, *, below: int | None = None, at: Sequence[int] = ()
) -> None:
    """Delete the entries whose marker is ``below`` an offset (a new log start:
    transactions wholly before it), or ``at`` these marker offsets (markers
    compacted away)."""
    if below is not None:
        cur.execute(
            """DELETE FROM kgroups_aborted_txns
               WHERE topic_id = %s AND partition = %s AND last_offset < %s""",
            (topic_id, partition, below),
        )
    if at:
        cur.execute(
            """DELETE FROM kgroups_aborted_txns
               WHERE topic_id = %s AND partition = %s AND last_offset = ANY(%s)""",
            (topic_id, partition, list(at)),
        )
