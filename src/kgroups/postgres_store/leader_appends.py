"""Appends whose offsets the leader assigned: one statement, one round trip.

A leader that assigned offsets in memory (``Append.expected_base``, what every
``StoreLog`` sends) knows every row of its transaction before the store
answers: the batches' offsets, its producers' rows, its aborts. So the whole
append is one statement, run on its own (autocommit): the conditional UPDATE
of the partitions' rows, and, joined to the rows it updated, the INSERT of the
batches, the upsert of the producers and the INSERT of the aborted
transactions, in data-modifying CTEs. A partition whose row did not match
(fenced, or its log ending elsewhere) gets none of its rows written; the
others commit. The statement's result comes back once PostgreSQL has
committed it, WAL flushed (``synchronous_commit`` on): one round trip instead
of BEGIN, UPDATE, INSERT and COMMIT, and one statement for the server to run.

It comes in four texts (with or without producers' rows, with or without
aborts), so the connection prepares each once (psycopg prepares a statement
run five times).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from kgroups.errors import KafkaError
from kgroups.postgres_store.appends import Append, Appended
from kgroups.postgres_store.binary_arrays import (
    BinaryArray,
    bigint_array,
    bytea_array,
    int_array,
    smallint_array,
    text_array,
)
from kgroups.postgres_store.fencing import FENCE, Writer, refusal
from kgroups.postgres_store.producer_states import ProducerRow
from kgroups.postgres_store.store import Cur, Store
from kgroups.records.batch import (
    HEADER_SIZE,
    PARTITION_LEADER_EPOCH_OFFSET,
    read_header,
)

_OFFSET = struct.Struct(">q")
_EPOCH = struct.Struct(">i")

_MOVED = f"""WITH moved AS (
        UPDATE kgroups_partitions p SET next_offset = v.expected + v.n
        FROM unnest(%(names)b::text[], %(parts)b::int[], %(epochs)b::int[],
                    %(counts)b::bigint[], %(expected)b::bigint[]) WITH ORDINALITY
                 AS v(name, part, epoch, n, expected, at),
             kgroups_topics t, kgroups_brokers b
        WHERE t.name = v.name AND p.topic_id = t.topic_id AND p.partition = v.part
            AND p.leader_epoch = v.epoch AND p.next_offset = v.expected AND {FENCE}
        RETURNING v.at, p.topic_id, p.partition, p.log_start_offset
    ), batches AS (
        INSERT INTO kgroups_batches
            (topic_id, partition, base_offset, last_offset, max_timestamp, batch)
        SELECT m.topic_id, m.partition, x.base, x.last, x.ts, x.batch
        FROM unnest(%(b_at)b::bigint[], %(b_base)b::bigint[], %(b_last)b::bigint[],
                    %(b_ts)b::bigint[], %(b_batch)b::bytea[]) AS x(at, base, last, ts, batch)
        JOIN moved m ON m.at = x.at
    )"""
_PRODUCERS = """, producers AS (
        INSERT INTO kgroups_producers
            (topic_id, partition, producer_id, producer_epoch, last_timestamp, batches,
             coordinator_epoch, txn_first_offset)
        SELECT m.topic_id, m.partition, r.id, r.epoch, r.ts, r.batches, r.coordinator, r.txn
        FROM unnest(%(r_at)b::bigint[], %(r_id)b::bigint[], %(r_epoch)b::smallint[],
                    %(r_ts)b::bigint[], %(r_batches)b::bytea[], %(r_coordinator)b::int[],
                    %(r_txn)b::bigint[]) AS r(at, id, epoch, ts, batches, coordinator, txn)
        JOIN moved m ON m.at = r.at
        ON CONFLICT (topic_id, partition, producer_id) DO UPDATE
            SET producer_epoch = EXCLUDED.producer_epoch,
                last_timestamp = EXCLUDED.last_timestamp,
                batches = EXCLUDED.batches,
                coordinator_epoch = EXCLUDED.coordinator_epoch,
                txn_first_offset = EXCLUDED.txn_first_offset
    )"""
_ABORTED = """, aborted AS (
        INSERT INTO kgroups_aborted_txns
            (topic_id, partition, producer_id, first_offset, last_offset, last_stable_offset)
        SELECT m.topic_id, m.partition, a.id, a.first, a.last, a.lso
        FROM unnest(%(a_at)b::bigint[], %(a_id)b::bigint[], %(a_first)b::bigint[],
                    %(a_last)b::bigint[], %(a_lso)b::bigint[]) AS a(at, id, first, last, lso)
        JOIN moved m ON m.at = a.at
    )"""
_RESULT = """
    SELECT at, log_start_offset FROM moved"""

# By (with producers' rows, with aborts): most appends have neither (the
# coordinator's, non-idempotent producers'), and every parameter costs.
STATEMENTS = {
    (producers, aborted): _MOVED
    + (_PRODUCERS if producers else "")
    + (_ABORTED if aborted else "")
    + _RESULT
    for producers in (False, True)
    for aborted in (False, True)
}


def append_assigned(
    store: Store, writer: Writer, appends: Sequence[Append]
) -> list[Appended | KafkaError]:
    """``append_many`` for appends that all carry ``expected_base``; appends to
    one partition must follow on from each other, in the order given."""
    # Per partition, in order of first appearance: its appends and its next offset.
    order: dict[tuple[str, int], int] = {}
    members: list[list[int]] = []
    firsts: list[int] = []  # where each partition's log must end now
    ends: list[int] = []
    params: dict[str, list[Any]] = {key: [] for key in _ARRAYS}
    answers: list[Appended | KafkaError | None] = [None] * len(appends)
    offsets: list[tuple[int, int]] = []  # each append's (base, last)
    producers: dict[tuple[int, int], ProducerRow] = {}
    for i, a in enumerate(appends):
        assert a.expected_base is not None
        key = (a.topic, a.partition)
        at = order.get(key)
        if at is None:
            at = order[key] = len(members)
            members.append([])
            firsts.append(a.expected_base)
            ends.append(a.expected_base)
            params["names"].append(a.topic)
            params["parts"].append(a.partition)
            params["epochs"].append(a.leader_epoch)
            params["expected"].append(a.expected_base)
        elif appends[members[at][0]].leader_epoch != a.leader_epoch:
            raise ValueError(f"two leader epochs for {a.topic}-{a.partition} in one append")
        elif ends[at] != a.expected_base:
            raise ValueError(f"appends to {a.topic}-{a.partition} do not follow on")
        members[at].append(i)
        offset = a.expected_base
        for batch in a.batches:
            stamped, last, max_ts = _stamped(batch, offset, a.leader_epoch)
            params["b_at"].append(at + 1)  # WITH ORDINALITY counts from 1
            params["b_base"].append(offset)
            params["b_last"].append(last)
            params["b_ts"].append(max_ts)
            params["b_batch"].append(stamped)
            offset = last + 1
        offsets.append((a.expected_base, offset - 1))
        ends[at] = offset
        for row in a.producers:  # a later append's row is newer
            producers[(at, row[0])] = row
        for entry in a.aborted:
            params["a_at"].append(at + 1)
            params["a_id"].append(entry.producer_id)
            params["a_first"].append(entry.first_offset)
            params["a_last"].append(entry.last_offset)
            params["a_lso"].append(entry.last_stable_offset)
    if not members:
        return []
    params["counts"] = [end - first for end, first in zip(ends, firsts, strict=True)]
    for (at, _producer_id), row in producers.items():
        params["r_at"].append(at + 1)
        for column, value in zip(_PRODUCER_COLUMNS, row, strict=True):
            params[column].append(value)
    statement = STATEMENTS[(bool(producers), bool(params["a_at"]))]
    if not producers:
        for column in ("r_at", *_PRODUCER_COLUMNS):
            del params[column]
    if not params["a_at"]:
        for column in _ABORTED_COLUMNS:
            del params[column]

    arrays = {column: _ARRAYS[column](values) for column, values in params.items()}

    def work(cur: Cur) -> list[Appended | KafkaError]:
        cur.execute(statement, writer.params(store, **arrays))
        for at, log_start in cur.fetchall():
            for i in members[int(at) - 1]:
                answers[i] = Appended(offsets[i][0], offsets[i][1], int(log_start))
        for key, at in order.items():
            if answers[members[at][0]] is None:
                error = refusal(cur, store, writer, *key)
                for i in members[at]:
                    answers[i] = error
        return [a for a in answers if a is not None]

    return store.statement(work)


_ABORTED_COLUMNS = ("a_at", "a_id", "a_first", "a_last", "a_lso")
# ``ProducerRow``'s fields, in order.
_PRODUCER_COLUMNS = ("r_id", "r_epoch", "r_ts", "r_batches", "r_coordinator", "r_txn")
# Each parameter's array type.
_ARRAYS: dict[str, Callable[[Any], BinaryArray]] = {
    "names": text_array,
    "parts": int_array,
    "epochs": int_array,
    "expected": bigint_array,
    "counts": bigint_array,
    **dict.fromkeys(("b_at", "b_base", "b_last", "b_ts"), bigint_array),
    "b_batch": bytea_array,
    "r_at": bigint_array,
    "r_id": bigint_array,
    "r_epoch": smallint_array,
    "r_ts": bigint_array,
    "r_batches": bytea_array,
    "r_coordinator": int_array,
    "r_txn": bigint_array,
    **dict.fromkeys(_ABORTED_COLUMNS, bigint_array),
}


def _stamped(batch: bytes, base_offset: int, leader_epoch: int) -> tuple[bytes, int, int]:
    """The batch with this base offset and leader epoch in its header (copied
    only if it lacks them: a leader's batches have them already)."""
    if len(batch) < HEADER_SIZE:
        raise ValueError("a record batch is shorter than its header")
    header = read_header(batch)
    last = base_offset + header.last_offset_delta
    if header.base_offset == base_offset and header.partition_leader_epoch == leader_epoch:
        return batch, last, header.max_timestamp
    stamped = bytearray(batch)
    _OFFSET.pack_into(stamped, 0, base_offset)
    _EPOCH.pack_into(stamped, PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
    return bytes(stamped), last, header.max_timestamp
