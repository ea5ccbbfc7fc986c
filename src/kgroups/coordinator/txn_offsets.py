"""Offsets committed inside a transaction (TxnOffsetCommit), pending until
the transaction's marker says commit or abort.

A pending offset is kept per producer id and is not what OffsetFetch shows as
committed. When the producer's commit marker is stored, each of its pending
offsets becomes the committed offset, unless a plain (non-transactional)
commit of the same partition was written after it: the newer record wins, as
in Kafka, which compares their log offsets. The shard applies records in log
order, so "written after" is "applied after" and a flag on the pending entry
says it. An abort marker drops the producer's pending offsets; a tombstone
(OffsetDelete, DeleteGroups) drops the partition's pending offsets of every
producer.

Every change is listed in ``changes`` so that a call whose batch fails to
append can be taken back (``undo``).
"""

from __future__ import annotations

from typing import NamedTuple

from kgroups.coordinator.offsets import TopicPartition
from kgroups.coordinator.result import Record

GroupPartition = tuple[str, TopicPartition]


class PendingOffset(NamedTuple):
    record: Record  # the offset commit record, applied as is on commit
    seq: int  # order of arrival, to tell which a marker covers
    superseded: bool = False  # a plain commit of the partition came after it


# (producer id, group and partition, the entry before the change)
Change = tuple[int, GroupPartition, PendingOffset | None]


class TransactionalOffsets:
    def __init__(self) -> None:
        self._by_producer: dict[int, dict[GroupPartition, PendingOffset]] = {}
        # group -> partition -> producers with a pending offset for it (read
        # by the plain commit path, which asks only whether its group is here)
        self.by_group: dict[str, dict[TopicPartition, set[int]]] = {}
        self._seq = 0
        self.changes: list[Change] = []

    def __bool__(self) -> bool:
        return bool(self._by_producer)

    @property
    def seq(self) -> int:
        """The next pending offset's sequence number."""
        return self._seq

    # -- reading -------------------------------------------------------------

    def has_group(self, group_id: str) -> bool:
        return group_id in self.by_group

    def has(self, group_id: str, tp: TopicPartition) -> bool:
        partitions = self.by_group.get(group_id)
        return partitions is not None and tp in partitions

    def partitions(self, group_id: str) -> set[TopicPartition]:
        return set(self.by_group.get(group_id, ()))

    def producers(self) -> list[int]:
        return sorted(self._by_producer)

    # -- changes -------------------------------------------------------------

    def add(self, producer_id: int, group_id: str, tp: TopicPartition, record: Record) -> None:
        self._set(producer_id, (group_id, tp), PendingOffset(record, self._seq))
        self._seq += 1

    def plain_commit(self, group_id: str, tps: list[TopicPartition]) -> None:
        """A plain commit of these partitions was written: pending offsets
        written before it lose to it when their transaction commits."""
        partitions = self.by_group.get(group_id)
        if partitions is None:
            return
        for tp in tps:
            for producer_id in list(partitions.get(tp, ())):
                key = (group_id, tp)
                entry = self._by_producer[producer_id][key]
                if not entry.superseded:
                    self._set(producer_id, key, entry._replace(superseded=True))

    def remove(self, group_id: str, tp: TopicPartition) -> None:
        """A tombstone of the partition's offset: no producer's offset stays pending."""
        partitions = self.by_group.get(group_id)
        if partitions is None:
            return
        for producer_id in list(partitions.get(tp, ())):
            self._set(producer_id, (group_id, tp), None)

    def end(self, producer_id: int, before_seq: int, commit: bool) -> list[Record]:
        """The producer's transaction ended: its offsets that arrived before
        ``before_seq`` leave pending; on commit, the records of those not
        superseded are returned, to apply."""
        pending = self._by_producer.get(producer_id)
        if pending is None:
            return []
        records = []
        for key, entry in list(pending.items()):
            if entry.seq < before_seq:
                # Applied once the marker is stored: never taken back.
                self._set(producer_id, key, None, journal=False)
                if commit and not entry.superseded:
                    records.append(entry.record)
                    self._supersede_older(key, entry.seq)
        return records

    def _supersede_older(self, key: GroupPartition, seq: int) -> None:
        """A committed offset: other transactions' older offsets of the
        partition lose to it when they commit (Kafka keeps the newest record)."""
        group_id, tp = key
        for producer_id in self.by_group.get(group_id, {}).get(tp, ()):
            entry = self._by_producer[producer_id][key]
            if entry.seq < seq and not entry.superseded:
                self._by_producer[producer_id][key] = entry._replace(superseded=True)

    def undo(self, changes: list[Change]) -> None:
        for producer_id, key, previous in reversed(changes):
            self._set(producer_id, key, previous, journal=False)

    def _set(
        self,
        producer_id: int,
        key: GroupPartition,
        entry: PendingOffset | None,
        *,
        journal: bool = True,
    ) -> None:
        pending = self._by_producer.setdefault(producer_id, {})
        if journal:
            self.changes.append((producer_id, key, pending.get(key)))
        group_id, tp = key
        if entry is not None:
            pending[key] = entry
            self.by_group.setdefault(group_id, {}).setdefault(tp, set()).add(producer_id)
            return
        pending.pop(key, None)
        if not pending:
            del self._by_producer[producer_id]
        partitions = self.by_group.get(group_id)
        if partitions is None:
            return
        producers = partitions.get(tp)
        if producers is not None:
            producers.discard(producer_id)
            if not producers:
                del partitions[tp]
                if not partitions:
                    del self.by_group[group_id]
