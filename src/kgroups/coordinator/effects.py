"""Collects what one call into a shard produces, then becomes its Result."""

from __future__ import annotations

from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.result import AppendToken, Record, Response, Result
from kgroups.coordinator.undo import Undo


class Effects:
    __slots__ = ("records", "replies", "undo")

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.replies: list[tuple[object, Response]] = []
        self.undo: list[Undo] = []

    def reply(self, reply_to: object, response: Response) -> None:
        self.replies.append((reply_to, response))

    def emit(self, record: Record, table: GroupTable) -> None:
        """Append a record to the batch and apply it, through the replay path."""
        self.records.append(record)
        table.apply(*record)

    def to_result(self, batch_id: int) -> Result:
        token = (
            AppendToken(batch_id, tuple(self.undo), tuple(self.replies)) if self.records else None
        )
        return Result(records=self.records, replies=self.replies, append_token=token)
