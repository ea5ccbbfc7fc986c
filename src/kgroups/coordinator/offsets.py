"""A committed offset and the partition it belongs to."""

from __future__ import annotations

from typing import NamedTuple

from kgroups.coordinator.records import NO_LEADER_EPOCH, NO_TIMESTAMP, OffsetCommitValue


class TopicPartition(NamedTuple):
    topic: str
    partition: int


# A NamedTuple, not a frozen dataclass: an offset commit builds one per
# partition, and a tuple is built several times faster.
class CommittedOffset(NamedTuple):
    offset: int
    leader_epoch: int  # -1 when the client did not say
    metadata: str
    commit_timestamp_ms: int
    # Only commits of OffsetCommit v1-v4 with a retention time carry one (KIP-211
    # dropped it); such offsets expire by this timestamp instead of by retention.
    expire_timestamp_ms: int | None = None

    @classmethod
    def from_record(cls, value: OffsetCommitValue) -> CommittedOffset:
        return cls(
            offset=value.offset,
            leader_epoch=value.leader_epoch,
            metadata=value.metadata,
            commit_timestamp_ms=value.commit_timestamp,
            expire_timestamp_ms=(
                None if value.expire_timestamp == NO_TIMESTAMP else value.expire_timestamp
            ),
        )

    def to_record(self) -> OffsetCommitValue:
        return OffsetCommitValue(
            offset=self.offset,
            metadata=self.metadata,
            commit_timestamp=self.commit_timestamp_ms,
            leader_epoch=self.leader_epoch if self.leader_epoch >= 0 else NO_LEADER_EPOCH,
            expire_timestamp=(
                NO_TIMESTAMP if self.expire_timestamp_ms is None else self.expire_timestamp_ms
            ),
        )
