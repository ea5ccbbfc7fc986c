"""The exception type that carries a Kafka error code to the wire."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "KafkaError", "RecordsRejected"]


class KafkaError(Exception):
    """A failure that a handler reports to the client as ``error_code``.

    Raised anywhere below the request handlers (storage, cluster, coordinator);
    the handler turns it into the response's error code and, where the API has
    one, its error message.
    """

    def __init__(self, error_code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error_code.name)
        self.error_code = error_code
        self.message = message


class RecordsRejected(KafkaError):
    """A batch refused because of some of its records, named by their index in
    the batch with a reason each (a produce response's ``record_errors``).

    Clients fail the named records with ``error_code`` and the others of the
    batch as failed because of them (librdkafka: _INVALID_DIFFERENT_RECORD), so
    a producer can tell which of its messages was at fault.
    """

    MAX_SHOWN = 3  # the record errors quoted in the message, as Kafka does

    def __init__(self, error_code: ErrorCode, record_errors: list[tuple[int, str]]) -> None:
        shown = "; ".join(f"record {i}: {why}" for i, why in record_errors[: self.MAX_SHOWN])
        super().__init__(
            error_code,
            f"{len(record_errors)} record(s) of the batch rejected (at most "
            f"{self.MAX_SHOWN} shown): {shown}",
        )
        self.record_errors = tuple(record_errors)


class WriteInDoubt(KafkaError):
    """A write whose outcome is unknown (the store's answer to it was lost): it
    may have been stored. Its code is the storage error the coordinators map;
    a producer is answered REQUEST_TIMED_OUT, as Kafka answers a write not
    confirmed in time, which clients take as possibly written and retry as it
    was (an idempotent retry of a stored batch is then a duplicate). Told
    NOT_LEADER_OR_FOLLOWER or KAFKA_STORAGE_ERROR, librdkafka takes the batch
    as not written and may give its sequence numbers to other records."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.kafka_storage_error, message)
