"""Who is on the other end of a connection, and through which listener.

One object per connection; every request's context copies its principal and
listener. A SASL listener's connection starts unauthenticated until a SASL
exchange sets the principal.
"""

from __future__ import annotations

from dataclasses import dataclass

ANONYMOUS = "User:ANONYMOUS"


@dataclass(slots=True)
class ConnectionSecurity:
    listener: str
    security_protocol: str
    """PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""
    principal: str = ANONYMOUS
    authenticated: bool = True
    peer_subject: str | None = None
    """The TLS client certificate's subject (RFC 2253), when one was given."""

    @classmethod
    def accepted(
        cls, listener: str, security_protocol: str, peer_subject: str | None = None
    ) -> ConnectionSecurity:
        """A new connection: a TLS client certificate names the principal, as
        Kafka's DEFAULT ssl.principal.mapping.rules do; SASL authenticates later."""
        sasl = security_protocol.startswith("SASL_")
        principal = ANONYMOUS if peer_subject is None or sasl else f"User:{peer_subject}"
        return cls(listener, security_protocol, principal, not sasl, peer_subject)


# What a request passed without a connection (tests, tools) runs as; never changed.
PLAINTEXT_SECURITY = ConnectionSecurity("PLAINTEXT", "PLAINTEXT")
