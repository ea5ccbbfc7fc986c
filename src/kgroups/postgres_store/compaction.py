"""Compaction of a partition log kept in the cluster store (``cleanup.policy=compact``).

The rules are the local cleaner's (``storage/cleaner.py``), applied to stored
batches instead of segment files:

- The *closed* part of the log is compacted: everything before the last
  ``segment.bytes`` of batches, which play the part of the active segment,
  and before the last stable offset (a transaction still open may abort).
- A round runs once the *dirty* part (from ``clean_offset``, where the last
  round ended, to the closed end) is at least ``min.cleanable.dirty.ratio`` of
  the closed part.
- Pass 1 maps each key of the dirty part to its newest offset (at most
  ``max_keys`` keys; the rest waits for the next round). Pass 2 reads the
  closed part up to what was mapped: a record stays if it is the newest of
  its key (keyless records go); a tombstone goes once it was compacted by an
  earlier round and its batch's newest timestamp is more than
  ``delete.retention.ms`` old. The records of aborted transactions go; a
  transaction's marker goes once none of its batches is left, by the
  tombstones' rule (``compaction_txns``), an abort marker with its entry in
  the aborted transaction index.
- A batch keeps its offsets, base timestamp and producer fields (a filtered
  batch, as the local cleaner writes them); a batch left with no record is
  deleted, which leaves a gap in the offsets, as Kafka's compacted logs have.

The reads take short transactions of their own; the changes, and the new
``clean_offset``, are written in one transaction fenced like an append (same
leader epoch and live lease). Only the leader rewrites or deletes batches, so
what was read has not changed when that transaction commits; a replaced
leader's round changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from kgroups.partitions.config import DEFAULT_MAP_ENTRIES, LogConfig
from kgroups.postgres_store.aborted_txns import AbortedTxn, aborted_in, delete_aborted
from kgroups.postgres_store.compaction_txns import TxnCleaning, aborted_ranges, in_aborted
from kgroups.postgres_store.fencing import FENCE, Writer, refusal
from kgroups.postgres_store.reads import partition_offsets
from kgroups.postgres_store.store import Cur, Store
from kgroups.records.batch import read_header, records_section
from kgroups.records.filter import filtered_batch, parse_records

_PAGE_ROWS = 500


@dataclass(frozen=True, slots=True)
class CompactionStats:
    clean_offset: int  # the next round's dirty part starts here
    records_read: int
    records_kept: int
    bytes_read: int
    bytes_written: int

    def __str__(self) -> str:
        return (
            f"compacted up to offset {self.clean_offset}: {self.records_read} records into "
            f"{self.records_kept} ({self.bytes_read} -> {self.bytes_written} bytes)"
        )


@dataclass(frozen=True, slots=True)
class _Plan:
    topic_id: object
    partition: int
    log_start: int
    clean_offset: int  # where the dirty part starts
    closed_end: int  # the first offset of the part left alone
    aborted: tuple[AbortedTxn, ...]  # the aborted transactions before closed_end


def compact(
    store: Store,
    writer: Writer,
    topic: str,
    partition: int,
    leader_epoch: int,
    config: LogConfig,
    now_ms: int,
    *,
    last_stable_offset: int | None = None,
    max_keys: int = DEFAULT_MAP_ENTRIES,
) -> CompactionStats | None:
    """One round; None if the log is not dirty enough to be worth it.
    ``last_stable_offset`` is the leader's (None: no transaction is open)."""
    plan = store.transaction(
        lambda cur: _plan(
            cur,
            topic,
            partition,
            config.segment_bytes,
            config.min_cleanable_dirty_ratio,
            last_stable_offset,
        )
    )
    if plan is None:
        return None
    ranges = aborted_ranges(plan.aborted)
    latest: dict[bytes, int] = {}
    mapped_end = plan.closed_end
    for base, batch in _batches(store, plan, plan.clean_offset, plan.closed_end):
        header = read_header(batch)
        if header.is_control or (ranges and in_aborted(ranges, header)):
            continue  # an aborted record is no key's latest value
        if latest and len(latest) + header.records_count > max_keys:
            mapped_end = base  # the map is full: compact up to here this round
            break
        for span in parse_records(records_section(batch, header), header.records_count):
            if span[4] is not None:
                latest[span[4]] = base + span[2]

    dropped: list[int] = []
    markers_gone: list[int] = []
    rewritten: list[tuple[int, bytes, int]] = []
    read = kept = bytes_read = bytes_written = 0
    tombstone_cutoff = now_ms - config.delete_retention_ms
    txns = TxnCleaning(plan.aborted)
    for base, batch in _batches(store, plan, plan.log_start, mapped_end):
        header = read_header(batch)
        read += header.records_count
        bytes_read += len(batch)
        # Tombstones and markers go only once consumers of the dirty part had
        # their chance.
        drop_tombstones = (
            header.last_offset < plan.clean_offset and header.max_timestamp < tombstone_cutoff
        )
        if header.is_control:
            if txns.marker(header, batch) and drop_tombstones:
                dropped.append(base)
                markers_gone.append(header.last_offset)
            else:
                kept += header.records_count
                bytes_written += len(batch)
            continue
        if txns.data_batch(header):
            dropped.append(base)  # an aborted transaction's
            continue
        data = records_section(batch, header)
        spans = parse_records(data, header.records_count)
        survivors = [
            span
            for span in spans
            if span[4] is not None
            and base + span[2] >= latest.get(span[4], -1)
            and not (span[5] and drop_tombstones)
        ]
        kept += len(survivors)
        if len(survivors) == len(spans):
            bytes_written += len(batch)
        elif not survivors:
            dropped.append(base)
        else:
            smaller = filtered_batch(header, data, survivors)
            rewritten.append((base, smaller, read_header(smaller).max_timestamp))
            bytes_written += len(smaller)

    def write(cur: Cur) -> None:
        cur.execute(
            f"""UPDATE kgroups_partitions p SET clean_offset = %(end)s
                FROM kgroups_brokers b
                WHERE p.topic_id = %(topic_id)s AND p.partition = %(partition)s
                    AND p.leader_epoch = %(epoch)s AND {FENCE}
                RETURNING p.log_start_offset""",
            writer.params(
                store,
                end=mapped_end,
                topic_id=plan.topic_id,
                partition=partition,
                epoch=leader_epoch,
            ),
        )
        if cur.fetchone() is None:
            raise refusal(cur, store, writer, topic, partition)
        if dropped:
            cur.execute(
                """DELETE FROM kgroups_batches WHERE topic_id = %s AND partition = %s
                       AND base_offset = ANY(%s)""",
                (plan.topic_id, partition, dropped),
            )
        if markers_gone:
            delete_aborted(cur, plan.topic_id, partition, at=markers_gone)
        if rewritten:
            cur.execute(
                """UPDATE kgroups_batches k SET batch = v.batch, max_timestamp = v.ts
                   FROM unnest(%b::bigint[], %b::bytea[], %b::bigint[]) AS v(base, batch, ts)
                   WHERE k.topic_id = %b AND k.partition = %b AND k.base_offset = v.base""",
                [*(list(c) for c in zip(*rewritten, strict=True)), plan.topic_id, partition],
            )

    store.transaction(write)
    return CompactionStats(mapped_end, read, kept, bytes_read, bytes_written)


def _plan(
    cur: Cur,
    topic: str,
    partition: int,
    segment_bytes: int,
    min_dirty_ratio: float,
    last_stable_offset: int | None,
) -> _Plan | None:
    topic_id, offsets = partition_offsets(cur, topic, partition)
    log_start = offsets.log_start_offset
    clean_offset = max(offsets.clean_offset, log_start)
    # The active part: the newest batches whose later bytes fit in segment.bytes.
    cur.execute(
        """SELECT min(base_offset) FROM (
               SELECT base_offset,
                      sum(length(batch)) OVER (ORDER BY base_offset DESC) - length(batch) AS after
               FROM kgroups_batches WHERE topic_id = %s AND partition = %s
           ) AS tail WHERE after < %s""",
        (topic_id, partition, segment_bytes),
    )
    found = cur.fetchone()
    if found is None or found[0] is None:
        return None  # an empty log
    closed_end = int(found[0])
    if last_stable_offset is not None:
        closed_end = min(closed_end, last_stable_offset)
    if closed_end <= clean_offset:
        return None
    cur.execute(
        """SELECT sum(CASE WHEN base_offset >= %s THEN length(batch) ELSE 0 END),
                  sum(length(batch))
           FROM kgroups_batches WHERE topic_id = %s AND partition = %s
               AND last_offset >= %s AND base_offset < %s""",
        (clean_offset, topic_id, partition, log_start, closed_end),
    )
    sizes = cur.fetchone()
    if sizes is None or not sizes[1]:
        return None
    if int(sizes[0] or 0) / int(sizes[1]) < min_dirty_ratio:
        return None
    aborted = tuple(aborted_in(cur, topic_id, partition, log_start, closed_end))
    return _Plan(topic_id, partition, log_start, clean_offset, closed_end, aborted)


def _batches(store: Store, plan: _Plan, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """(base offset, bytes) of the batches holding offsets in [start, end), a page
    per short transaction."""
    position = start
    while position < end:

        def page(cur: Cur, position: int = position) -> list[tuple[int, int, bytes]]:
            cur.execute(
                """SELECT base_offset, last_offset, batch FROM kgroups_batches
                   WHERE topic_id = %s AND partition = %s
                       AND last_offset >= %s AND base_offset < %s
                   ORDER BY base_offset LIMIT %s""",
                (plan.topic_id, plan.partition, position, end, _PAGE_ROWS),
            )
            return [(int(r[0]), int(r[1]), bytes(r[2])) for r in cur.fetchall()]

        rows = store.transaction(page)
        for base, _last, batch in rows:
            yield base, batch
        if len(rows) < _PAGE_ROWS:
            return
        position = rows[-1][1] + 1
