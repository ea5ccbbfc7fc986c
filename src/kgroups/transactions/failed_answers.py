"""How Kafka answers a request whose record could not be appended to
``__transaction_state``: the append's error, translated, in the request's answer."""

from __future__ import annotations

from kgroups.errors import ErrorCode
from kgroups.transactions.messages import (
    AddPartitionsAnswer,
    Answer,
    EndTxnAnswer,
    ErrorAnswer,
    InitProducerIdAnswer,
)

_APPEND_ERRORS = {
    ErrorCode.unknown_topic_or_partition: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas_after_append: ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
    ErrorCode.not_leader_or_follower: ErrorCode.not_coordinator,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
    ErrorCode.message_too_large: ErrorCode.unknown_server_error,
    ErrorCode.record_list_too_large: ErrorCode.unknown_server_error,
}


def answer_error(append_error: ErrorCode) -> ErrorCode:
    """What the requests of a batch that failed with ``append_error`` are answered."""
    return _APPEND_ERRORS.get(append_error, append_error)


def failed_answer(answer: Answer, error: ErrorCode) -> Answer:
    """``answer`` with ``error`` in place of its outcome."""
    if isinstance(answer, InitProducerIdAnswer):
        return InitProducerIdAnswer(error)
    if isinstance(answer, AddPartitionsAnswer):
        return AddPartitionsAnswer(answer.transactional_id, dict.fromkeys(answer.errors, error))
    if isinstance(answer, EndTxnAnswer):
        return EndTxnAnswer(error)
    return ErrorAnswer(error)
