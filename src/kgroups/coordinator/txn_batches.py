"""Transactional offsets by batch: the changes a batch made to the pending
offsets (undone if it fails to append), and the transaction markers appended
(applied to the pending offsets once durable). Loading takes the same path."""

from __future__ import annotations

from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.offsets import TopicPartition
from kgroups.coordinator.records import OffsetCommitKey, decode_key
from kgroups.coordinator.result import AppendToken
from kgroups.coordinator.txn_offsets import Change, TransactionalOffsets


class TxnBatches:
    def __init__(self, txn: TransactionalOffsets, table: GroupTable) -> None:
        self._txn = txn
        self._table = table
        # Markers appended, by batch id: (producer id, commit, pending offsets
        # they cover are those of sequence below this); applied once durable.
        self._markers: dict[int, tuple[int, bool, int]] = {}
        # Per batch id, the pending offsets' changes to undo if it fails.
        self._undo: dict[int, list[Change]] = {}
        # Batches whose changes an earlier batch's failure took back: they held
        # offsets all the same, when their own failure is reported.
        self._taken_back: set[int] = set()

    def call_done(self, token: AppendToken | None) -> None:
        """The call's changes to pending offsets go with its batch, if any."""
        if token is not None:
            self._undo[token.batch_id] = self._txn.changes
        self._txn.changes = []

    def marker_appended(self, batch_id: int, producer_id: int, commit: bool) -> None:
        """It covers the producer's offsets pending so far."""
        self._markers[batch_id] = (producer_id, commit, self._txn.seq)

    def durable(self, batch_id: int) -> None:
        """The batch (and every one before it) is durable: its markers apply."""
        if self._undo:
            for done in [b for b in self._undo if b <= batch_id]:
                del self._undo[done]
        if self._taken_back:
            self._taken_back = {b for b in self._taken_back if b > batch_id}
        if self._markers:
            for done in sorted(b for b in self._markers if b <= batch_id):
                self._end_transaction(*self._markers.pop(done))

    def failed(self, batch_id: int) -> bool:
        """A marker not stored applies nothing, and takes nothing else back:
        it changes no pending offset until durable, so no later batch builds
        on it. Pending offsets not stored go, with the changes of later
        batches in flight, which built on them (newest first). Whether the
        batch held a marker or pending offsets (its own, or taken back
        already with an earlier batch's failure): then its answer said they
        were stored, and it must not stand."""
        if self._markers.pop(batch_id, None) is not None:
            return True
        held_offsets = bool(self._undo.get(batch_id)) or batch_id in self._taken_back
        self._taken_back.discard(batch_id)
        for failed_id in sorted((b for b in self._undo if b >= batch_id), reverse=True):
            changes = self._undo.pop(failed_id)
            self._txn.undo(changes)
            if failed_id != batch_id and changes:
                self._taken_back.add(failed_id)
        return held_offsets

    def replay(self, key: bytes, value: bytes | None, producer_id: int) -> bool:
        """A record loaded while transactions are pending, or in a
        transactional batch (``producer_id`` >= 0): whether it stays pending
        (else the caller applies it to the table)."""
        decoded = decode_key(key)
        if not isinstance(decoded, OffsetCommitKey):
            return False
        tp = TopicPartition(decoded.topic, decoded.partition)
        if producer_id >= 0:
            if value is not None:
                self._txn.add(producer_id, decoded.group, tp, (key, value))
                if self._table.get(decoded.group) is None:
                    # A simple group, as the commit that wrote it made.
                    self._table.create(decoded.group, None)
            self._txn.changes = []
            return True
        if value is None:
            self._txn.remove(decoded.group, tp)
        else:
            self._txn.plain_commit(decoded.group, [tp])
        self._txn.changes = []
        return False

    def _end_transaction(self, producer_id: int, commit: bool, before_seq: int) -> None:
        for key, value in self._txn.end(producer_id, before_seq, commit):
            self._table.apply(key, value)
