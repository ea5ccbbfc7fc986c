"""What a handler knows about the request besides its body."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, eq=False)
class ConnectionInfo:
    """One client connection, as far as requests learn it: the peer's address
    and the client software its ApiVersions named (KIP-511). Compared and
    hashed by identity: one per connection."""

    host: str
    port: int | None = None
    software_name: str | None = None
    software_version: str | None = None


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
    connection: ConnectionInfo | None = None
    """The connection it came through; None for a request made without one."""
    file_regions: bool = False
    """The response may carry records as regions of their log files, which the
    connection sends from file to socket (a plaintext socket)."""
