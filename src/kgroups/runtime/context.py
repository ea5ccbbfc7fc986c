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
    principal: str = "User:ANONYMOUS"
    """The Kafka principal of the connection (``User:...``)."""
    listener: str = "PLAINTEXT"
    """The name of the listener the request came through."""
    connection_id: int = 0
    """Names the connection while it is open (0: none, a request made in
    process); share sessions end with theirs."""
