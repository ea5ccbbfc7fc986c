"""The error a client sees when the coordinator's records could not be stored.

Storage speaks of replicas, leaders and sizes; a group member only needs to
know whether to retry here, find the coordinator again, or give up. The
mapping is Kafka's.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

_UNAVAILABLE = (
    ErrorCode.unknown_topic_or_partition,
    ErrorCode.not_enough_replicas,
    ErrorCode.not_enough_replicas_after_append,
)
_MOVED = (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error)
_TOO_LARGE = (
    ErrorCode.message_too_large,
    ErrorCode.record_list_too_large,
    ErrorCode.invalid_fetch_size,
)

# What every answer below makes of a partition unavailable or moved; each adds
# its own cases, and answers any other error UNKNOWN_SERVER_ERROR.
_NOT_HERE = dict.fromkeys(_UNAVAILABLE, ErrorCode.coordinator_not_available) | dict.fromkeys(
    _MOVED, ErrorCode.not_coordinator
)
_GROUP_METADATA = _NOT_HERE | {
    # Members retry the rebalance rather than look for a new coordinator.
    ErrorCode.request_timed_out: ErrorCode.rebalance_in_progress,
}
_OFFSET_COMMIT = (
    _NOT_HERE
    | dict.fromkeys(_TOO_LARGE, ErrorCode.invalid_commit_offset_size)
    | {ErrorCode.request_timed_out: ErrorCode.request_timed_out}
)


def group_metadata_append_error(error: ErrorCode) -> ErrorCode:
    """For JoinGroup and SyncGroup answers that waited on a group metadata record."""
    return _GROUP_METADATA.get(error, ErrorCode.unknown_server_error)


def offset_commit_append_error(error: ErrorCode) -> ErrorCode:
    """For OffsetCommit answers."""
    return _OFFSET_COMMIT.get(error, ErrorCode.unknown_server_error)


def deletion_append_error(error: ErrorCode) -> ErrorCode:
    """For OffsetDelete and DeleteGroups answers."""
    return _NOT_HERE.get(error, ErrorCode.unknown_server_error)


def retriable_append_error(error: ErrorCode) -> ErrorCode:
    """For answers that only showed state built on the lost records: the
    client asks again (here, or at a new coordinator)."""
    if error in _MOVED:
        return ErrorCode.not_coordinator
    return ErrorCode.coordinator_not_available
