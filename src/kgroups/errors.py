"""The one exception type that carries a Kafka error code to the wire."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "KafkaError"]


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
