"""What the share coordinator answers for one share partition (one key:
group, topic id, partition), with Kafka's error messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgroups.errors import ErrorCode

if TYPE_CHECKING:
    from kgroups.share_partitions.state_records import StateBatch

UNINITIALIZED_START_OFFSET = -1
UNKNOWN_DELIVERY_COMPLETE_COUNT = -1

NEGATIVE_PARTITION_ID = "The partition id cannot be a negative number."
NEGATIVE_LEADER_EPOCH = "The leader epoch cannot be a negative number."
NEGATIVE_STATE_EPOCH = "The state epoch cannot be a negative number."
NULL_TOPIC_ID = "The topic id cannot be null."
WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."
FENCED_LEADER_EPOCH = "The leader epoch in the request is older than the epoch on the broker."
FENCED_STATE_EPOCH = "The coordinator rejected the request because the state epoch did not match."
UNKNOWN_TOPIC_OR_PARTITION = "This server does not host this topic-partition."
LOADING = "The coordinator is loading and hence can't process requests."
NOT_COORDINATOR = "This is not the correct coordinator."

DEFAULT_MESSAGES = {
    ErrorCode.coordinator_load_in_progress: LOADING,
    ErrorCode.not_coordinator: NOT_COORDINATOR,
    ErrorCode.unknown_topic_or_partition: UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.fenced_leader_epoch: FENCED_LEADER_EPOCH,
    ErrorCode.fenced_state_epoch: FENCED_STATE_EPOCH,
}


@dataclass(frozen=True, slots=True)
class KeyAnswer:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    state_epoch: int = 0
    leader_epoch: int = 0
    start_offset: int = 0
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = UNKNOWN_DELIVERY_COMPLETE_COUNT


def refused(error: ErrorCode, message: str | None = None) -> KeyAnswer:
    return KeyAnswer(error, message if message is not None else DEFAULT_MESSAGES.get(error))


OK = KeyAnswer()
