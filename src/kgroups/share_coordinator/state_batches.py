"""Combining a share partition's state batches, as Kafka's
PersisterStateBatchCombiner does for the share coordinator.

A write brings batches that replace what was kept for their offsets; what
lies before the start offset goes; neighbours of one state and delivery
count become one batch. The result is sorted and has no overlaps.
"""

from __future__ import annotations

from collections.abc import Iterable

from kgroups.share_partitions.state_records import StateBatch


def combine(
    kept: Iterable[StateBatch], written: Iterable[StateBatch], start_offset: int
) -> tuple[StateBatch, ...]:
    """``written`` over ``kept``, from ``start_offset`` on."""
    current = sorted(kept, key=lambda b: b.first_offset)
    for batch in sorted(written, key=lambda b: b.first_offset):
        current = _overlay(current, batch)
    return _merged(_clipped(current, start_offset))


def _overlay(batches: list[StateBatch], new: StateBatch) -> list[StateBatch]:
    out: list[StateBatch] = []
    for b in batches:
        if b.last_offset < new.first_offset or b.first_offset > new.last_offset:
            out.append(b)
            continue
        if b.first_offset < new.first_offset:
            out.append(_part(b, b.first_offset, new.first_offset - 1))
        if b.last_offset > new.last_offset:
            out.append(_part(b, new.last_offset + 1, b.last_offset))
    out.append(new)
    out.sort(key=lambda b: b.first_offset)
    return out


def _part(batch: StateBatch, first: int, last: int) -> StateBatch:
    return StateBatch(first, last, batch.delivery_state, batch.delivery_count)


def _clipped(batches: list[StateBatch], start_offset: int) -> list[StateBatch]:
    if start_offset < 0:
        return batches
    return [
        b if b.first_offset >= start_offset else _part(b, start_offset, b.last_offset)
        for b in batches
        if b.last_offset >= start_offset
    ]


def _merged(batches: list[StateBatch]) -> tuple[StateBatch, ...]:
    out: list[StateBatch] = []
    for b in batches:
        previous = out[-1] if out else None
        if (
            previous is not None
            and previous.last_offset + 1 == b.first_offset
            and previous.delivery_state == b.delivery_state
            and previous.delivery_count == b.delivery_count
        ):
            out[-1] = _part(previous, previous.first_offset, b.last_offset)
        else:
            out.append(b)
    return tuple(out)
