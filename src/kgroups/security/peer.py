"""Who is on the other end of a connection, and through which listener.

One object per connection; every request's context copies its principal and
listener. A SASL listener's connection starts unauthenticated until a SASL
exchange sets the principal.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroups.security.ssl_principal_mapper import SslPrincipalMapper

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
        cls,
        listener: str,
        security_protocol: str,
        peer_subject: str | None = None,
        mapper: SslPrincipalMapper | None = None,
    ) -> ConnectionSecurity:
        """A new connection: a TLS client certificate names the principal through
        the listener's ssl.principal.mapping.rules (none: DEFAULT, the subject
        itself); SASL authenticates later. NoMatchingRule refuses the client."""
        sasl = security_protocol.startswith("SASL_")
        if peer_subject is None or sasl:
            principal = ANONYMOUS
        else:
            name = peer_subject if mapper is None else mapper.name(peer_subject)
            principal = f"User:{name}"
        return cls(listener, security_protocol, principal, not sasl, peer_subject)


# What a request passed without a connection (tests, tools) runs as; never changed.
PLAINTEXT_SECURITY = ConnectionSecurity("PLAINTEXT", "PLAINTEXT")
