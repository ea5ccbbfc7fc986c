"""What compaction does with transactions in a store log: Kafka's
CleanedTransactionMetadata, applied while the batches are read in offset order.

- A batch of an aborted transaction (its producer, between the transaction's
  first offset and its abort marker in the aborted transaction index) goes,
  whatever its keys; pass 1 counts none of its records.
- A marker may go once no batch of its transaction is left before it: an
  abort marker when this round met none of the transaction's batches (the
  round before removed them), a commit marker when it met no transactional
  batch of its producer since the previous marker. The caller removes it only
  as it removes a tombstone (compacted by an earlier round and older than
  ``delete.retention.ms``), so consumers that read the transaction's records
  see its marker too. An abort marker takes its index entry with it.

Compaction never reaches the last stable offset, so every transaction whose
batches it reads has ended.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from kgroups.postgres_store.aborted_txns import AbortedTxn
from kgroups.records.batch import BatchHeader
from kgroups.records.control import read_marker

__all__ = ["TxnCleaning", "aborted_ranges", "in_aborted"]


def aborted_ranges(aborted: Iterable[AbortedTxn]) -> dict[int, list[tuple[int, int]]]:
    """Producer id -> (first offset, marker offset) of its aborted transactions."""
    ranges: dict[int, list[tuple[int, int]]] = {}
    for txn in aborted:
        ranges.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
    return ranges


def in_aborted(ranges: dict[int, list[tuple[int, int]]], header: BatchHeader) -> bool:
    """Whether a data batch belongs to an aborted transaction."""
    if not header.is_transactional or header.is_control:
        return False
    found = ranges.get(header.producer_id)
    return found is not None and any(first <= header.base_offset <= last for first, last in found)


class TxnCleaning:
    """Fed every batch of a round in offset order, from the log start."""

    def __init__(self, aborted: Iterable[AbortedTxn]) -> None:
        self._to_come = deque(sorted(aborted, key=lambda t: t.first_offset))
        # Producer id -> whether a batch of its aborted transaction was met.
        self._aborting: dict[int, bool] = {}
        # Producers with a transactional batch met since their last marker.
        self._committing: set[int] = set()

    def _reach(self, offset: int) -> None:
        while self._to_come and self._to_come[0].first_offset <= offset:
            txn = self._to_come.popleft()
            self._aborting.setdefault(txn.producer_id, False)

    def data_batch(self, header: BatchHeader) -> bool:
        """Whether this data batch goes (it belongs to an aborted transaction)."""
        self._reach(header.last_offset)
        if not header.is_transactional:
            return False
        pid = header.producer_id
        if pid in self._aborting:
            self._aborting[pid] = True
            return True
        self._committing.add(pid)
        return False

    def marker(self, header: BatchHeader, batch: bytes) -> bool:
        """Whether this control batch may go: nothing of its transaction is left."""
        self._reach(header.last_offset)
        marker = read_marker(batch)
        if marker is None:
            return header.records_count == 0  # emptied already: nothing to keep
        pid = header.producer_id
        if marker.commit:
            if pid in self._committing:
                self._committing.discard(pid)
                return False
            return True
        return not self._aborting.pop(pid, False)
