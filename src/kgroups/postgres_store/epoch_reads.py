"""The leader epochs of a partition kept in the store, read from its batches.

The store keeps no list of epochs: each batch carries its own in its header
(the partitionLeaderEpoch field, bytes 12 to 16), and along a partition's log
the epochs never go down, since an append is taken only at the partition's
current leader epoch and that only grows. So the first batch after a given
epoch is found by bisection of the offsets, each step one indexed read of one
batch's header: some thirty short queries for a log of a billion offsets, in
one transaction, instead of a walk through every batch. What is asked is only
what a leader cannot answer from memory (``StoreLog``): epochs older than its
own, whose batches were written before it started at ``epoch_start``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kgroups.partitions.leader_epochs import EpochEndOffset, LeaderEpochs
from kgroups.postgres_store.reads import partition_offsets
from kgroups.postgres_store.store import Cur, Store
from kgroups.records.batch import PARTITION_LEADER_EPOCH_OFFSET

__all__ = ["end_offset_for_epoch", "log_start_epoch"]

# The header field as SQL reads it out of the batch bytes (positions from 1).
_EPOCH_BYTES = f"substring(batch FROM {PARTITION_LEADER_EPOCH_OFFSET + 1} FOR 4)"


class _Batch(NamedTuple):
    base_offset: int
    leader_epoch: int


def end_offset_for_epoch(
    store: Store,
    topic: str,
    partition: int,
    epoch: int,
    leader_epoch: int,
    epoch_start: int,
    log_end: int,
) -> EpochEndOffset:
    """Kafka's answer for ``epoch`` from the batches below ``epoch_start``, where
    the leader at ``leader_epoch`` began (its log ending at ``log_end``)."""

    def work(cur: Cur) -> EpochEndOffset:
        topic_id, offsets = partition_offsets(cur, topic, partition)
        log_start = offsets.log_start_offset
        known = LeaderEpochs()
        for batch in _around(cur, topic_id, partition, log_start, epoch_start, epoch):
            known.observe(batch.leader_epoch, batch.base_offset)
        known.assign(leader_epoch, epoch_start)
        return known.end_offset_for(epoch, log_start, log_end)

    return store.transaction(work)


def log_start_epoch(
    store: Store, topic: str, partition: int, leader_epoch: int, epoch_start: int
) -> tuple[int, int]:
    """The log start and the epoch of the batch holding it (ListOffsets earliest)."""

    def work(cur: Cur) -> tuple[int, int]:
        topic_id, offsets = partition_offsets(cur, topic, partition)
        log_start = offsets.log_start_offset
        known = LeaderEpochs()
        first = _first(cur, topic_id, partition, log_start, epoch_start)
        if first is not None:
            known.observe(first.leader_epoch, first.base_offset)
        known.assign(leader_epoch, epoch_start)
        return log_start, known.epoch_at_start(log_start)

    return store.transaction(work)


def _around(
    cur: Cur, topic_id: object, partition: int, log_start: int, below: int, epoch: int
) -> list[_Batch]:
    """Of the batches below ``below``, the last one at ``epoch`` or before and the
    first one after it, those that exist: all that Kafka's answer looks at."""
    first = _first(cur, topic_id, partition, log_start, below)
    if first is None:
        return []
    if first.leader_epoch > epoch:
        return [first]
    # The batch at ``at`` is at ``epoch`` or before; the first batch from
    # ``after`` on is after it, or there is none below ``below``.
    at, after = first, below
    while after - at.base_offset > 1:
        middle = (at.base_offset + after) // 2
        found = _batch_from(cur, topic_id, partition, middle, below)
        if found is None or found.leader_epoch > epoch:
            after = middle
        else:
            at = found
    found = _batch_from(cur, topic_id, partition, after, below)
    return [at] if found is None else [at, found]


def _first(cur: Cur, topic_id: object, partition: int, log_start: int, below: int) -> _Batch | None:
    """The batch holding the log start (or the first after it), if below ``below``."""
    cur.execute(
        f"""SELECT base_offset, {_EPOCH_BYTES} FROM kgroups_batches
            WHERE topic_id = %s AND partition = %s AND last_offset >= %s AND base_offset < %s
            ORDER BY base_offset LIMIT 1""",
        (topic_id, partition, log_start, below),
    )
    return _read(cur.fetchone())


def _batch_from(
    cur: Cur, topic_id: object, partition: int, offset: int, below: int
) -> _Batch | None:
    """The first batch starting at ``offset`` or after, if below ``below``."""
    cur.execute(
        f"""SELECT base_offset, {_EPOCH_BYTES} FROM kgroups_batches
            WHERE topic_id = %s AND partition = %s AND base_offset >= %s AND base_offset < %s
            ORDER BY base_offset LIMIT 1""",
        (topic_id, partition, offset, below),
    )
    return _read(cur.fetchone())


def _read(row: Any) -> _Batch | None:
    if row is None:
        return None
    base, epoch = row
    return _Batch(int(base), int.from_bytes(epoch, "big", signed=True))
