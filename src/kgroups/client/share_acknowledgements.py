"""Acknowledgements waiting to be sent for one share partition: offset to
type, turned into the wire's batches (consecutive offsets of one type go as
one range)."""

from __future__ import annotations

__all__ = ["AckBatch", "Acknowledgements"]

AckBatch = tuple[int, int, int]
"""First offset, last offset, acknowledge type."""


class Acknowledgements:
    __slots__ = ("_types",)

    def __init__(self) -> None:
        self._types: dict[int, int] = {}

    def add(self, offset: int, ack_type: int) -> None:
        self._types[offset] = ack_type

    def __bool__(self) -> bool:
        return bool(self._types)

    def offsets(self) -> set[int]:
        return set(self._types)

    def batches(self) -> list[AckBatch]:
        out: list[list[int]] = []
        for offset in sorted(self._types):
            ack_type = self._types[offset]
            if out and out[-1][1] == offset - 1 and out[-1][2] == ack_type:
                out[-1][1] = offset
            else:
                out.append([offset, offset, ack_type])
        return [(first, last, t) for first, last, t in out]
