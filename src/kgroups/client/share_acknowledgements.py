"""Acknowledgements waiting to be sent for one share partition: offset to
type, turned into the wire's batches (consecutive offsets of one type go as
one range)."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["AckBatch", "Acknowledgements"]

AckBatch = tuple[int, int, int]
"""First offset, last offset, acknowledge type."""


class Acknowledgements:
    __slots__ = ("_types",)

    def __init__(self) -> None:
        self._types: dict[int, int] = {}

    def add(self, offset: int, ack_type: int) -> None:
        self._types[offset] = ack_type

    def add_all(self, offsets: Iterable[int], ack_type: int) -> None:
        self._types.update(dict.fromkeys(offsets, ack_type))

    def __bool__(self) -> bool:
        return bool(self._types)

    def offsets(self) -> set[int]:
        return set(self._types)

    def batches(self) -> list[AckBatch]:
        offsets = sorted(self._types)
        if not offsets:
            return []
        first, last = offsets[0], offsets[-1]
        if last - first + 1 == len(offsets) and len(set(self._types.values())) == 1:
            # The common case (a run of records accepted), found without a loop.
            return [(first, last, self._types[first])]
        out: list[list[int]] = []
        for offset in offsets:
            ack_type = self._types[offset]
            if out and out[-1][1] == offset - 1 and out[-1][2] == ack_type:
                out[-1][1] = offset
            else:
                out.append([offset, offset, ack_type])
        return [(first, last, t) for first, last, t in out]
