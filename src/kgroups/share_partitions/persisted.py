"""A share partition's state as ``__share_group_state`` keeps it, and back.

What is kept is the start offset and, for each in-flight record, its state
and delivery count: an ACQUIRED record is kept as AVAILABLE (an acquisition
does not outlive the broker), with the deliveries it had. Records of equal
state and count next to each other are one state batch.

A restored partition's in-flight records are the state batches; offsets
between them that no batch names are AVAILABLE, not yet delivered, so
nothing the log holds is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable

from kgroups.share_partitions.config import SharePartitionConfig
from kgroups.share_partitions.in_flight import Delivery, InFlightBatch
from kgroups.share_partitions.partition import SharePartition
from kgroups.share_partitions.state_records import StateBatch
from kgroups.share_partitions.states import RecordState


def state_batches(sp: SharePartition) -> tuple[StateBatch, ...]:
    out: list[StateBatch] = []
    for batch in sp.batches():
        for first, last, delivery in batch.deliveries():
            if last < sp.start_offset:
                continue
            first = max(first, sp.start_offset)
            state = delivery.state
            if state is RecordState.ACQUIRED:
                state = RecordState.AVAILABLE
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous.last_offset + 1 == first
                and previous.delivery_state == state
                and previous.delivery_count == delivery.delivery_count
            ):
                out[-1] = StateBatch(previous.first_offset, last, state, delivery.delivery_count)
            else:
                out.append(StateBatch(first, last, int(state), delivery.delivery_count))
    return tuple(out)


def restored(
    config: SharePartitionConfig, start_offset: int, batches: Iterable[StateBatch]
) -> SharePartition:
    sp = SharePartition(config, start_offset)
    position = start_offset
    for batch in sorted(batches, key=lambda b: b.first_offset):
        if batch.last_offset < position:
            continue
        first = max(batch.first_offset, position)
        if first > position:  # offsets no batch names: not delivered yet
            sp.add_in_flight(InFlightBatch(position, first - 1, Delivery(RecordState.AVAILABLE, 0)))
        state = RecordState(batch.delivery_state)
        if state is RecordState.ACQUIRED:
            state = RecordState.AVAILABLE
        sp.add_in_flight(
            InFlightBatch(first, batch.last_offset, Delivery(state, batch.delivery_count))
        )
        position = batch.last_offset + 1
    sp.settle()
    return sp
