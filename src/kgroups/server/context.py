"""What a handler knows about the request besides its body."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    client_host: str
    # Kafka's principal string and the listener the request arrived on.
    principal: str = "User:ANONYMOUS"
    listener: str = "PLAINTEXT"
