"""The current leader epoch a client names (KIP-320), checked as Kafka checks
it before Fetch, ListOffsets and OffsetForLeaderEpoch touch a partition: an
epoch older than the partition's is FENCED_LEADER_EPOCH (the client's metadata
is stale), a newer one UNKNOWN_LEADER_EPOCH (this broker's is: the client
retries). The partition's epoch is its log's, the one Metadata answers."""

from __future__ import annotations

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.leader_epochs import NO_EPOCH
from kgroups.partitions.log import PartitionLog

__all__ = ["check_current_leader_epoch"]


def check_current_leader_epoch(log: PartitionLog, current: int) -> None:
    """Raise the error for ``current`` at ``log``; -1 (no epoch) is not checked."""
    if current == NO_EPOCH or current == log.leader_epoch:
        return
    if current < log.leader_epoch:
        raise KafkaError(
            ErrorCode.fenced_leader_epoch,
            f"leader epoch {current} is older than the current {log.leader_epoch}",
        )
    raise KafkaError(
        ErrorCode.unknown_leader_epoch,
        f"leader epoch {current} is newer than the current {log.leader_epoch}",
    )
