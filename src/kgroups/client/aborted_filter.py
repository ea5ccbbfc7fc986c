"""Which batches a reader withholds -- the consumer's and the Spark source's:
transaction markers always, and at read_committed the batches of transactions
that were aborted.

A fetch response lists each aborted transaction as (producer id, first offset);
that producer's transactional batches count as aborted from the first offset up
to its abort marker, the control batch that ends the transaction.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

from kgroups.records.batch import BatchHeader, decode_records

__all__ = ["AbortedFilter"]

_CONTROL_KEY = struct.Struct(">hh")
_ABORT = 0


class AbortedFilter:
    def __init__(self, read_committed: bool) -> None:
        self.read_committed = read_committed
        self._aborted: list[tuple[int, int]] = []
        self._aborting: set[int] = set()

    def add_response(self, aborted_transactions: Iterable[Any] | None) -> None:
        """The aborted transactions a fetch response lists for this partition."""
        if self.read_committed and aborted_transactions:
            self._aborted = sorted(
                {*self._aborted, *((t.first_offset, t.producer_id) for t in aborted_transactions)},
                reverse=True,
            )

    def skip(self, batch: memoryview, header: BatchHeader) -> bool:
        if not self.read_committed:
            return header.is_control
        while self._aborted and self._aborted[-1][0] <= header.last_offset:
            self._aborting.add(self._aborted.pop()[1])
        if header.is_control:
            if header.producer_id in self._aborting and _is_abort_marker(batch):
                self._aborting.discard(header.producer_id)
            return True
        return header.is_transactional and header.producer_id in self._aborting


def _is_abort_marker(batch: memoryview) -> bool:
    records = decode_records(batch)
    if not records or records[0].key is None or len(records[0].key) < _CONTROL_KEY.size:
        return False
    _version, kind = _CONTROL_KEY.unpack_from(records[0].key)
    return bool(kind == _ABORT)
