"""What a handler knows about the request besides its body."""

from __future__ import annotations

from dataclasses import dataclass

ANONYMOUS = "User:ANONYMOUS"


@dataclass(frozen=True, slots=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    client_host: str
    principal: str = ANONYMOUS
    listener: str = "PLAINTEXT"
