"""TLS for SSL and SASL_SSL listeners, from Kafka's ssl.* keys (PEM stores).

Each listener reads its own listener.name.<name>.ssl.* keys first, then the
broker-wide ssl.* ones, as Kafka does.

The key store is a PEM file (or inline PEM) holding the private key and the
certificate chain; the trust store holds the CA certificates that client
certificates are checked against. A client certificate's subject, in RFC 2253
form, names the principal through the listener's ssl.principal.mapping.rules.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

from kgroups.config.broker_config import BrokerConfig, ConfigError
from kgroups.security.pem import inline_pem, load_inline_key_store
from kgroups.security.ssl_principal_mapper import InvalidRules, SslPrincipalMapper

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}
# RFC 2253 keywords (as Java's X500Principal writes them); others keep their name.
_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def server_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    """The context the TLS listener named `listener` serves with."""

    def get(key: str) -> str | None:
        value = config.tls.get(listener, key)
        return value if isinstance(value, str) and value else None

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = sorted(_VERSIONS[v] for v in (get("ssl.enabled.protocols") or "").split(","))
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    ciphers = get("ssl.cipher.suites")
    try:
        if ciphers:
            context.set_ciphers(ciphers)
        _load_key_store(context, get, listener, _password_key(config, listener))
        _load_trust_store(context, get)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"cannot set up TLS for listener {listener}: {e}") from None
    context.verify_mode = _CLIENT_AUTH[get("ssl.client.auth") or "none"]
    return context


def principal_mapper(config: BrokerConfig, listener: str) -> SslPrincipalMapper:
    """The listener's ssl.principal.mapping.rules; ConfigError when they do not parse."""
    key = "ssl.principal.mapping.rules"
    rules = config.tls.get(listener, key)
    try:
        return SslPrincipalMapper(rules if isinstance(rules, str) else "DEFAULT")
    except InvalidRules as e:
        raise ConfigError(f"{config.tls.key_of(listener, key)}: {e}") from None


def _password_key(config: BrokerConfig, listener: str) -> str:
    """Where the key store's password is expected: with the listener's own key
    store, the listener's own key."""
    own = any(
        config.tls.key_of(listener, key) != key
        for key in ("ssl.keystore.location", "ssl.keystore.key", "ssl.key.password")
    )
    return f"listener.name.{listener.lower()}.ssl.key.password" if own else "ssl.key.password"


def _load_key_store(
    context: ssl.SSLContext, get: Callable[[str], str | None], listener: str, password_key: str
) -> None:
    given = get("ssl.key.password")

    # Without a password OpenSSL would ask for one on the terminal: refuse instead.
    def password() -> str:
        if given is None:
            raise ConfigError(
                f"the private key of listener {listener} is encrypted: set {password_key}"
            )
        return given

    location = get("ssl.keystore.location")
    key = get("ssl.keystore.key")
    chain = get("ssl.keystore.certificate.chain")
    if location is not None:
        context.load_cert_chain(location, password=password)
        return
    if key is None or chain is None:
        raise ConfigError(
            f"listener {listener} needs ssl.keystore.key and ssl.keystore.certificate.chain"
        )
    load_inline_key_store(context, key, chain, password)


def _load_trust_store(context: ssl.SSLContext, get: Callable[[str], str | None]) -> None:
    location = get("ssl.truststore.location")
    inline = get("ssl.truststore.certificates")
    if location is not None:
        context.load_verify_locations(cafile=location)
    elif inline is not None:
        context.load_verify_locations(cadata=inline_pem(inline))


def peer_subject(ssl_object: Any) -> str | None:
    """The verified client certificate's subject in RFC 2253 form, or None."""
    if ssl_object is None:
        return None
    cert = ssl_object.getpeercert()
    if not cert:
        return None
    rdns = cert.get("subject", ())
    # RFC 2253 writes the most specific name first: the reverse of the certificate's order.
    return ",".join(
        "+".join(f"{_KEYWORDS.get(attr, attr)}={_escape(value)}" for attr, value in rdn)
        for rdn in reversed(rdns)
    )


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        special = ch in ',+"\\<>;' or (i == 0 and ch in "# ") or (i == len(value) - 1 and ch == " ")
        out.append("\\" + ch if special else ch)
    return "".join(out)
