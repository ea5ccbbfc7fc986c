"""Who is on the other end of one connection, and whether they proved it."""

from __future__ import annotations

from dataclasses import dataclass

ANONYMOUS = "User:ANONYMOUS"
SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})


@dataclass(slots=True)
class ConnectionSecurity:
    listener: str
    security_protocol: str
    principal: str = ANONYMOUS
    # False until a SASL exchange succeeds on a SASL_* listener.
    authenticated: bool = True
    # The TLS client certificate's subject, when one was presented.
    peer_certificate_subject: str | None = None

    @classmethod
    def for_listener(cls, listener: str, security_protocol: str) -> ConnectionSecurity:
        return cls(
            listener=listener,
            security_protocol=security_protocol,
            authenticated=not security_protocol.startswith("SASL_"),
        )
