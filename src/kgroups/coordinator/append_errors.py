"""The error a client sees when the coordinator's records could not be stored.

Storage speaks of replicas, leaders and sizes; a group member only needs to
know whether to retry here, find the coordinator again, or give up. The
mapping is Kafka's.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

_UNAVAILABLE = frozenset(
    {
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_enough_replicas,
        ErrorCode.not_enough_replicas_after_append,
    }
)
_MOVED = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error})
_TOO_LARGE = frozenset(
    {ErrorCode.message_too_large, ErrorCode.record_list_too_large, ErrorCode.invalid_fetch_size}
)


def group_metadata_append_error(error: ErrorCode) -> ErrorCode:
    """For JoinGroup and SyncGroup answers that waited on a group metadata record."""
    if error in _UNAVAILABLE:
        return ErrorCode.coordinator_not_available
    if error in _MOVED:
        return ErrorCode.not_coordinator
    if error is ErrorCode.request_timed_out:
        # Members retry the rebalance rather than look for a new coordinator.
        return ErrorCode.rebalance_in_progress
    return ErrorCode.unknown_server_error


def offset_commit_append_error(error: ErrorCode) -> ErrorCode:
    """For OffsetCommit answers."""
    if error in _UNAVAILABLE:
        return ErrorCode.coordinator_not_available
    if error in _MOVED:
        return ErrorCode.not_coordinator
    if error in _TOO_LARGE:
        return ErrorCode.invalid_commit_offset_size
    if error is ErrorCode.request_timed_out:
        return ErrorCode.request_timed_out
    return ErrorCode.unknown_server_error


def deletion_append_error(error: ErrorCode) -> ErrorCode:
    """For OffsetDelete and DeleteGroups answers."""
    if error in _UNAVAILABLE:
        return ErrorCode.coordinator_not_available
    if error in _MOVED:
        return ErrorCode.not_coordinator
    return ErrorCode.unknown_server_error


def retriable_append_error(error: ErrorCode) -> ErrorCode:
    """For answers that only showed state built on the lost records: the
    client asks again (here, or at a new coordinator)."""
    if error in _MOVED:
        return ErrorCode.not_coordinator
    return ErrorCode.coordinator_not_available
