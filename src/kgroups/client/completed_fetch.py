"""One partition's share of a fetch response, turned into records as the user asks
for them (the Java client's CompletedFetch).

The bytes hold whole record batches (possibly compressed), maybe followed by a
truncated one that the next fetch will bring again. Batches are only decoded
when poll() reaches them, ``max.poll.records`` at a time, starting from the
consumer's position: a fetch from the middle of a batch brings the whole batch,
and the records before the position are skipped.

Control batches (transaction markers) are never handed out. Under
read_committed, batches of transactions that were aborted are skipped too: the
response lists each aborted transaction's producer and first offset, and a
producer's batches count as aborted from that offset until its abort marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgroups.client.aborted_filter import AbortedFilter
from kgroups.client.consumer_record import ConsumerRecord, TopicPartition
from kgroups.errors import ErrorCode, KafkaError
from kgroups.records.batch import BatchHeader, batch_crc, decode_records, iter_batches

__all__ = ["CompletedFetch"]

_new = tuple.__new__


class CompletedFetch:
    __slots__ = (
        "_batch_index",
        "_batches",
        "_check_crcs",
        "_data",
        "_filter",
        "_pending",
        "_pending_end",
        "_pending_index",
        "epoch",
        "fetch_offset",
        "next_fetch_offset",
        "read_committed",
        "tp",
    )

    def __init__(
        self,
        tp: TopicPartition,
        data: bytes,
        *,
        fetch_offset: int,
        epoch: int,
        aborted_transactions: Sequence[Any] | None = None,
        read_committed: bool = False,
        check_crcs: bool = True,
    ) -> None:
        self.tp = tp
        self.epoch = epoch
        """The partition's seek epoch when fetched; stale once it differs."""
        self.fetch_offset = fetch_offset
        self._data = memoryview(data)
        self._batches: list[tuple[int, BatchHeader]] = list(iter_batches(self._data))
        self.next_fetch_offset = self._batches[-1][1].next_offset if self._batches else fetch_offset
        """Where the following fetch starts: past the last whole batch."""
        self._batch_index = 0
        self._pending: list[tuple[Any, ...]] = []
        self._pending_index = 0
        self._pending_end = fetch_offset
        self._check_crcs = check_crcs
        self.read_committed = read_committed
        self._filter = AbortedFilter(read_committed)
        self._filter.add_response(aborted_transactions)

    @property
    def has_batches(self) -> bool:
        return bool(self._batches)

    @property
    def exhausted(self) -> bool:
        return self._batch_index >= len(self._batches) and self._pending_index >= len(self._pending)

    def take(self, position: int, max_records: int) -> tuple[list[ConsumerRecord], int]:
        """Up to ``max_records`` records from ``position`` on, and the new position."""
        out: list[ConsumerRecord] = []
        topic, partition = self.tp
        while len(out) < max_records:
            if self._pending_index < len(self._pending):
                end = self._pending_index + (max_records - len(out))
                chunk = self._pending[self._pending_index : end]
                self._pending_index += len(chunk)
                out.extend(_new(ConsumerRecord, (topic, partition, *r)) for r in chunk)
                position = chunk[-1][0] + 1
                if self._pending_index >= len(self._pending):
                    position = max(position, self._pending_end)
                continue
            if self._batch_index >= len(self._batches):
                break
            pos, header = self._batches[self._batch_index]
            self._batch_index += 1
            if header.next_offset <= position:
                continue
            if self._skip(pos, header):
                position = max(position, header.next_offset)
                continue
            if self._check_crcs and batch_crc(self._data[pos:], header.size) != header.crc:
                raise KafkaError(
                    ErrorCode.corrupt_message,
                    f"record batch at offset {header.base_offset} of {self.tp} fails its CRC",
                )
            ttype = header.timestamp_type
            self._pending = [
                (o, t, ttype, k, v, h)
                for o, t, k, v, h in decode_records(self._data[pos : pos + header.size])
                if o >= position
            ]
            self._pending_index = 0
            self._pending_end = header.next_offset
            if not self._pending:
                position = max(position, header.next_offset)
        return out, position

    def _skip(self, pos: int, header: BatchHeader) -> bool:
        """Whether a batch is withheld from the user: markers, aborted data."""
        return self._filter.skip(self._data[pos : pos + header.size], header)
