"""What the client raises to its user, beyond the plain KafkaError of a broker reply."""

from __future__ import annotations

from collections.abc import Iterable

from kgroups.errors import ErrorCode, KafkaError

__all__ = [
    "AbortableTransactionError",
    "AuthenticationFailedError",
    "CommitFailedError",
    "FatalTransactionError",
    "FencedInstanceIdError",
    "InvalidTopicError",
    "NoOffsetForPartitionError",
    "RebalanceInProgressError",
    "RetriableError",
    "SslAuthenticationError",
    "StaleMemberEpochError",
    "TransactionStateError",
    "retriable",
]


def retriable(error: ErrorCode) -> bool:
    """Kafka's own classification: trying again may succeed."""
    return bool(error.retriable)


class RetriableError(KafkaError):
    """A failure that a later attempt may not meet (coordinator moving, loading,
    a connection lost); the client retries these itself until its deadline."""


class AuthenticationFailedError(KafkaError):
    """The broker refused this client's credentials (SASL_AUTHENTICATION_FAILED,
    with the broker's message) or its SASL mechanism (UNSUPPORTED_SASL_MECHANISM).
    Not retried: trying again with the same credentials fails the same way."""


class SslAuthenticationError(AuthenticationFailedError):
    """The TLS handshake failed: the broker's certificate is not signed by a CA
    of the trust store or does not name the host connected to, the broker
    refused the client's certificate, or no TLS version or cipher is common
    to both. It is not retried. No broker answered, so the code is
    UNKNOWN_SERVER_ERROR; the message says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(ErrorCode.unknown_server_error, f"SSL handshake failed: {reason}")


class CommitFailedError(KafkaError):
    """The commit cannot succeed: this member is no longer in the generation that
    owns the partitions (it was kicked out, or the group moved on). Its partitions
    may already belong to another member, so the offsets are not committed."""

    def __init__(self, error_code: ErrorCode, message: str | None = None) -> None:
        super().__init__(
            error_code,
            message
            or "Commit cannot be completed since the consumer is not part of an active group "
            "for auto partition assignment; it is likely that the consumer was kicked out "
            "of the group.",
        )


class StaleMemberEpochError(CommitFailedError):
    """group.protocol=consumer: the request carried a member epoch the coordinator
    has moved past. A commit made by the application fails (its partitions may
    have moved); one made before partitions are given up is retried with the
    member's new epoch, as in the Java client."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            ErrorCode.stale_member_epoch,
            message or "the member epoch is stale: the group moved on since the request was made",
        )


class RebalanceInProgressError(KafkaError):
    """The group is rebalancing; poll to complete the rebalance, then commit the
    offsets of the partitions that are still assigned."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            ErrorCode.rebalance_in_progress,
            message
            or "Offset commit cannot be completed since the consumer is undergoing a "
            "rebalance; call poll() to complete it, then retry the commit.",
        )


class FencedInstanceIdError(KafkaError):
    """Another consumer with the same group.instance.id joined: this one is a
    zombie and must stop. Fatal: every later call raises it again."""

    def __init__(self, instance_id: str | None) -> None:
        super().__init__(
            ErrorCode.fenced_instance_id,
            f"group.instance.id {instance_id!r} has been fenced by another consumer",
        )


class NoOffsetForPartitionError(KafkaError):
    """auto.offset.reset is "none" and a partition has no committed offset (or its
    position fell out of the log)."""

    def __init__(self, partitions: object) -> None:
        super().__init__(
            ErrorCode.offset_out_of_range,
            f"no offset to start from for {partitions} and auto.offset.reset is none",
        )


class InvalidTopicError(KafkaError):
    """The subscription (or assignment) names topics Kafka does not allow: names of
    1 to 249 ASCII letters, digits, '.', '_' and '-', other than "." and "..".
    Raised from poll() until the consumer subscribes to valid names only."""

    def __init__(self, topics: Iterable[str]) -> None:
        self.topics = sorted(topics)
        super().__init__(
            ErrorCode.invalid_topic_exception,
            "invalid topics: "
            + ", ".join(repr(t) for t in self.topics)
            + " (a topic name is 1 to 249 of [a-zA-Z0-9._-], and not '.' or '..')",
        )


class TransactionStateError(RuntimeError):
    """A transactional call made in the wrong state: begin_transaction() twice,
    send() outside a transaction, commit_transaction() after an abortable error."""


class FatalTransactionError(KafkaError):
    """The transactional producer can do nothing more: another producer with the
    same transactional.id fenced it (PRODUCER_FENCED), or it may not use that id.
    Close it; a new producer may take over the transactional.id."""


class AbortableTransactionError(KafkaError):
    """The current transaction failed and can only be aborted (abort_transaction());
    the producer may then begin a new one."""
