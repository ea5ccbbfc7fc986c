"""What the IO shell tells a handler about the request besides its body."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RequestContext:
    # The version the client spoke; error codes and a few fields depend on it.
    api_version: int
    client_id: str
    client_host: str
    # Opaque to the coordinator: handed back with the response so the shell can
    # route it, possibly long after the handler returned (parked JoinGroup/SyncGroup).
    reply_to: object
