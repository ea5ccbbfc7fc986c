"""In-flight records: fetched once, not yet past the start offset.

A batch of records moves as one while every record in it shares one state
(Kafka's batch state: one entry however large the batch). An acknowledgement
or acquisition of part of it cuts it into batches that each move as one
(SharePartition._carve), where Kafka gives each of its records a state of
its own; the states are the same either way. Acknowledgement types given
record by record do give each offset of the batch its own state, and from
then on its records move one by one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from kgroups.share_partitions.states import RecordState


@dataclass(slots=True)
class Delivery:
    """The state of a record, or of every record of a batch."""

    state: RecordState
    delivery_count: int
    member_id: str | None = None
    lock_deadline_ms: int | None = None

    def acquire(self, member_id: str, deadline_ms: int) -> None:
        self.state = RecordState.ACQUIRED
        self.delivery_count += 1
        self.member_id = member_id
        self.lock_deadline_ms = deadline_ms

    def end(self, state: RecordState) -> None:
        """The end of a delivery: the record is no longer any member's."""
        self.state = state
        self.member_id = None
        self.lock_deadline_ms = None

    def copy(self) -> Delivery:
        return Delivery(self.state, self.delivery_count, self.member_id, self.lock_deadline_ms)


class InFlightBatch:
    __slots__ = ("first", "last", "offsets", "whole")

    def __init__(self, first: int, last: int, whole: Delivery) -> None:
        self.first = first
        self.last = last
        self.whole: Delivery | None = whole
        # Per-offset states, once the batch stopped moving as one.
        self.offsets: dict[int, Delivery] | None = None

    def split(self) -> dict[int, Delivery]:
        if self.offsets is None:
            assert self.whole is not None
            whole = self.whole
            self.offsets = {o: whole.copy() for o in range(self.first, self.last + 1)}
            self.whole = None
        return self.offsets

    def deliveries(self) -> Iterator[tuple[int, int, Delivery]]:
        """(first, last, state) of each part that moves as one."""
        if self.whole is not None:
            yield self.first, self.last, self.whole
        else:
            assert self.offsets is not None
            for offset, delivery in self.offsets.items():
                yield offset, offset, delivery

    def first_unfinished(self, from_offset: int) -> int | None:
        """The first offset at or after ``from_offset`` whose state is not final."""
        if self.whole is not None:
            return None if self.whole.state.final else max(from_offset, self.first)
        assert self.offsets is not None
        for offset in range(max(from_offset, self.first), self.last + 1):
            if not self.offsets[offset].state.final:
                return offset
        return None
