"""Fenced appends to partition logs kept in the cluster store.

An append is one conditional UPDATE of the partition's row: it moves the log's
end forward only if the writer still leads the partition at the leader epoch it
believes in, under the lease epoch it registered with, and that lease is live
on the store's clock. The offsets come from that same row, so they are exactly
the ones the leader owns; the batches are inserted in the same transaction with
their base offset and partition leader epoch written into their headers (both
outside the CRC, as Kafka's leader writes them). A writer that was replaced, or
whose lease ran out, changes nothing and gets ``NotLeader`` / ``LeaseExpired``.

An append that carries abort markers also inserts their entries in the
aborted transaction index (``aborted_txns``), in the same transaction.

Many partitions' appends share one transaction, one UPDATE and one INSERT
(three round trips in all), the way the local log shares one fsync among the
requests that arrived meanwhile. A leader that assigned the offsets itself
sends its appends as one statement instead (``leader_appends``).

The row lock the UPDATE takes is what orders an append against a takeover: a
takeover that commits first bumps the leader epoch and the append finds no row
to update; an append that commits first is in the log before the new leader
reads its end.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from kgroups.errors import KafkaError
from kgroups.postgres_store.aborted_txns import INSERT as INSERT_ABORTED
from kgroups.postgres_store.aborted_txns import AbortedTxn, aborted_columns
from kgroups.postgres_store.fencing import FENCE, Writer, refusal
from kgroups.postgres_store.producer_states import UPSERT, ProducerRow, producer_columns
from kgroups.postgres_store.store import Cur, Store
from kgroups.records.batch import (
    HEADER_SIZE,
    PARTITION_LEADER_EPOCH_OFFSET,
    read_header,
)

_OFFSET = struct.Struct(">q")
_EPOCH = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Append:
    topic: str
    partition: int
    leader_epoch: int
    batches: Sequence[bytes]  # whole v2 record batches; their base offsets are replaced
    # The leader's own offset for the first batch: the append is refused unless
    # the log ends there (a leader that assigned offsets itself, in memory).
    expected_base: int | None = None
    # The producers these batches carry, as they stand once they are in: their
    # rows are written in the same transaction (see ``producer_states``).
    producers: Sequence[ProducerRow] = ()
    # The transactions aborted by markers among these batches (offsets as the
    # leader assigned them, so with ``expected_base`` only).
    aborted: Sequence[AbortedTxn] = ()


@dataclass(frozen=True, slots=True)
class Appended:
    base_offset: int  # of the first batch of this Append
    last_offset: int
    log_start_offset: int


def append(
    store: Store,
    writer: Writer,
    topic: str,
    partition: int,
    leader_epoch: int,
    batches: Sequence[bytes],
) -> Appended:
    result = append_many(store, writer, [Append(topic, partition, leader_epoch, batches)])[0]
    if isinstance(result, KafkaError):
        raise result
    return result


def append_many(
    store: Store, writer: Writer, appends: Sequence[Append]
) -> list[Appended | KafkaError]:
    """Append to many partitions in one transaction; one answer per ``Append``,
    in order. Appends to the same partition land in the order given."""
    groups: dict[tuple[str, int], list[int]] = {}
    counts = [_record_count(a.batches) for a in appends]
    for i, a in enumerate(appends):
        key = (a.topic, a.partition)
        if key in groups and appends[groups[key][0]].leader_epoch != a.leader_epoch:
            raise ValueError(f"two leader epochs for {a.topic}-{a.partition} in one append")
        if a.aborted and a.expected_base is None:
            raise ValueError("aborted transactions' offsets need the leader's expected base")
        groups.setdefault(key, []).append(i)
    if not groups:
        return []
    keys = list(groups)

    def work(cur: Cur) -> list[Appended | KafkaError]:
        cur.execute(
            f"""UPDATE kgroups_partitions p SET next_offset = p.next_offset + v.n
                FROM unnest(%(names)b::text[], %(parts)b::int[], %(epochs)b::int[],
                            %(counts)b::bigint[], %(expected)b::bigint[])
                         AS v(name, part, epoch, n, expected),
                     kgroups_topics t, kgroups_brokers b
                WHERE t.name = v.name AND p.topic_id = t.topic_id AND p.partition = v.part
                    AND p.leader_epoch = v.epoch AND (v.expected < 0 OR p.next_offset = v.expected)
                    AND {FENCE}
                RETURNING v.name, v.part, p.topic_id, p.next_offset - v.n, p.log_start_offset""",
            writer.params(
                store,
                names=[k[0] for k in keys],
                parts=[k[1] for k in keys],
                epochs=[appends[groups[k][0]].leader_epoch for k in keys],
                counts=[sum(counts[i] for i in groups[k]) for k in keys],
                expected=[_expected(appends[groups[k][0]]) for k in keys],
            ),
        )
        answers: list[Appended | KafkaError | None] = [None] * len(appends)
        rows: list[tuple[object, int, int, int, int, bytes]] = []
        producers: dict[tuple[object, int, int], ProducerRow] = {}
        aborted: list[tuple[object, int, AbortedTxn]] = []
        for name, part, topic_id, base, log_start in cur.fetchall():
            offset = int(base)
            for i in groups[(name, part)]:
                first = offset
                epoch = appends[i].leader_epoch
                for row in appends[i].producers:  # a later append's row is newer
                    producers[(topic_id, part, row[0])] = row
                aborted += ((topic_id, part, entry) for entry in appends[i].aborted)
                for batch in appends[i].batches:
                    stamped, last, max_ts = _stamp(batch, offset, epoch)
                    rows.append((topic_id, part, offset, last, max_ts, stamped))
                    offset = last + 1
                answers[i] = Appended(first, offset - 1, int(log_start))
        if rows:
            insert = """INSERT INTO kgroups_batches
                    (topic_id, partition, base_offset, last_offset, max_timestamp, batch)
                SELECT * FROM unnest(%b::uuid[], %b::int[], %b::bigint[], %b::bigint[],
                                     %b::bigint[], %b::bytea[])"""
            params: list[list[object]] = [list(column) for column in zip(*rows, strict=True)]
            if producers:
                # One statement, one round trip: the producers' rows ride along.
                insert = f"WITH inserted AS ({insert} RETURNING 1) {UPSERT}"
                params += producer_columns([(k[0], k[1], r) for k, r in producers.items()])
            cur.execute(insert, params)
        if aborted:
            cur.execute(INSERT_ABORTED, aborted_columns(aborted))
        for key in keys:
            if answers[groups[key][0]] is None:
                error = refusal(cur, store, writer, *key)
                for i in groups[key]:
                    answers[i] = error
        return [a for a in answers if a is not None]

    return store.transaction(work)


def _expected(append: Append) -> int:
    return -1 if append.expected_base is None else append.expected_base


def _record_count(batches: Sequence[bytes]) -> int:
    total = 0
    for batch in batches:
        if len(batch) < HEADER_SIZE:
            raise ValueError("a record batch is shorter than its header")
        total += read_header(batch).last_offset_delta + 1
    return total


def _stamp(batch: bytes, base_offset: int, leader_epoch: int) -> tuple[bytes, int, int]:
    header = read_header(batch)
    stamped = bytearray(batch)
    _OFFSET.pack_into(stamped, 0, base_offset)
    _EPOCH.pack_into(stamped, PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
    return bytes(stamped), base_offset + header.last_offset_delta, header.max_timestamp
