"""Collects what one call into a shard produces, then becomes its Result."""

from __future__ import annotations

from kgroups.coordinator.group_records import offset_key, offset_record
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.offsets import CommittedOffset, TopicPartition
from kgroups.coordinator.records import NO_LEADER_EPOCH, encode_offset_commit_value_v3
from kgroups.coordinator.result import AppendToken, Record, Response, Result


class Effects:
    __slots__ = ("records", "replies")

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.replies: list[tuple[object, Response]] = []

    def reply(self, reply_to: object, response: Response) -> None:
        self.replies.append((reply_to, response))

    def emit(self, record: Record, table: GroupTable) -> None:
        """Append a record to the batch and apply it, through the replay path."""
        self.records.append(record)
        table.apply(*record)

    def emit_offsets(
        self,
        group_id: str,
        offsets: list[tuple[TopicPartition, CommittedOffset]],
        table: GroupTable,
    ) -> None:
        """A commit's offset records: appended like any record, and applied
        through the same `apply_offset` that replay reaches after decoding them.
        Skipping the decode of bytes just encoded matters on the commit path,
        which writes one record per partition; it is exact for the usual value
        (v3). A value with an expiry time (v1) cannot hold the leader epoch, so
        it takes the full replay path and the state keeps only what was stored."""
        records = self.records
        plain = True
        for partition, offset in offsets:
            if offset.expire_timestamp_ms is None:
                epoch = offset.leader_epoch
                records.append(
                    (
                        offset_key(group_id, partition),
                        encode_offset_commit_value_v3(
                            offset.offset,
                            epoch if epoch >= 0 else NO_LEADER_EPOCH,
                            offset.metadata,
                            offset.commit_timestamp_ms,
                        ),
                    )
                )
            else:
                plain = False
                records.append(offset_record(group_id, partition, offset))
        if plain:
            table.apply_offsets(group_id, offsets)
            return
        for (partition, offset), record in zip(offsets, records[-len(offsets) :], strict=True):
            if offset.expire_timestamp_ms is None:
                table.apply_offset(group_id, partition, offset)
            else:
                table.apply(*record)

    def to_result(self, batch_id: int) -> Result:
        token = AppendToken(batch_id, tuple(self.replies)) if self.records else None
        return Result(records=self.records, replies=self.replies, append_token=token)
