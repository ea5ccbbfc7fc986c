"""How the client reaches a secured broker: the Java client's
``security.protocol``, ``ssl.*`` and ``sasl.*`` keys, the TLS context they
make, and the SASL exchange (SaslHandshake v1 then SaslAuthenticate, after
ApiVersions, as the Java client does).

Everything here happens once per connection, when it opens; requests on an
open connection cost the same whatever the protocol.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kio.schema.sasl_authenticate.v2 import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1 import SaslHandshakeRequest

from kgroups.client.config_schema import ConfigError, Setting, as_list, as_str, resolve
from kgroups.client.exceptions import AuthenticationFailedError
from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.security.pem import inline_pem, load_inline_key_store
from kgroups.security.scram import HASHES, ScramClient

__all__ = ["PLAINTEXT", "SETTINGS", "UNSUPPORTED", "ClientSecurity", "parse_jaas"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", *HASHES)
LOGIN_MODULES = (
    "org.apache.kafka.common.security.plain.PlainLoginModule",
    "org.apache.kafka.common.security.scram.ScramLoginModule",
)


class Connection(Protocol):
    """The part of BrokerConnection the SASL exchange uses."""

    def version_for(self, api_key: int, lowest: int, highest: int) -> int: ...

    async def send(self, request: Any, *, version: int | None = None) -> Any: ...


def _upper(value: object) -> str:
    return as_str(value).strip().upper()


def _optional(value: object) -> str | None:
    text = as_str(value).strip() if value is not None else ""
    return text or None


TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def _tls_versions(value: object) -> tuple[str, ...]:
    versions = as_list(value)
    if not versions or any(v not in TLS_VERSIONS for v in versions):
        raise ValueError(f"expected a list of {', '.join(TLS_VERSIONS)} (older ones are refused)")
    return versions


def _ignored(value: object) -> object:
    return value


SETTINGS = (
    Setting("security.protocol", _upper, "PLAINTEXT", choices=PROTOCOLS),
    Setting("sasl.mechanism", lambda v: as_str(v).strip(), "GSSAPI"),
    Setting("sasl.jaas.config", _optional, None, secret=True),
    Setting("ssl.protocol", lambda v: as_str(v).strip(), "TLSv1.3", choices=(*TLS_VERSIONS, "TLS")),
    Setting("ssl.enabled.protocols", _tls_versions, ("TLSv1.2", "TLSv1.3")),
    Setting("ssl.cipher.suites", as_list, ()),
    Setting("ssl.truststore.type", _upper, "JKS"),
    Setting("ssl.truststore.location", _optional, None),
    Setting("ssl.truststore.certificates", _optional, None, secret=True),
    Setting("ssl.keystore.type", _upper, "JKS"),
    Setting("ssl.keystore.location", _optional, None),
    Setting("ssl.keystore.key", _optional, None, secret=True),
    Setting("ssl.keystore.certificate.chain", _optional, None, secret=True),
    Setting("ssl.key.password", _optional, None, secret=True),
    Setting("ssl.endpoint.identification.algorithm", lambda v: as_str(v).strip(), "https"),
    # How the JVM builds its TLS engine; Python's ssl module has no such choices.
    Setting("ssl.keymanager.algorithm", _ignored, "SunX509"),
    Setting("ssl.trustmanager.algorithm", _ignored, "PKIX"),
    Setting("ssl.secure.random.implementation", _ignored, None),
    Setting("ssl.provider", _ignored, None),
)
"""The security keys every client configuration takes (consumer, producer, tools)."""

_PEM_ONLY = "only PEM stores are read (ssl.*.type=PEM); convert the store with keytool/openssl"
UNSUPPORTED = {
    "ssl.truststore.password": "a PEM trust store has no password",
    "ssl.keystore.password": "a PEM key store has no store password; ssl.key.password "
    "decrypts the private key",
    "ssl.engine.factory.class": "a Java class replacing the TLS engine; TLS here is "
    "Python's ssl module, set up from the ssl.* keys",
    "sasl.login.callback.handler.class": "there are no callback handlers",
    "sasl.client.callback.handler.class": "there are no callback handlers",
}

_JAAS_ENTRY = re.compile(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?);?\s*$")
_JAAS_OPTION = re.compile(r'\s*([^\s=]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))')


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """``Module flag key="value" ...;`` -> (module, options), as Java reads a
    single-entry ``sasl.jaas.config``."""
    entry = _JAAS_ENTRY.fullmatch(text.strip())
    if entry is None:
        raise ConfigError("sasl.jaas.config is not of the form 'LoginModule required key=\"v\";'")
    module, _flag, rest = entry.groups()
    options: dict[str, str] = {}
    position = 0
    while rest[position:].strip():
        option = _JAAS_OPTION.match(rest, position)
        if option is None:
            # Only where: the text holds the password, and Java never echoes it either.
            after = f" after option {list(options)[-1]!r}" if options else ""
            at = entry.start(3) + len(rest) - len(rest[position:].lstrip()) + 1  # 1-based
            raise ConfigError(f"sasl.jaas.config: cannot read the options at character {at}{after}")
        quoted, bare = option.group(2), option.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        options[option.group(1)] = value
        position = option.end()
    return module, options


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    """The SASL mechanism on SASL_* protocols; None on the others."""
    username: str = ""
    password: str = field(default="", repr=False)  # kept out of logged configurations

    @classmethod
    def from_config(cls, raw: Mapping[str, object], kind: str = "client") -> ClientSecurity:
        """From the security keys alone (a tool's --command-config)."""
        values, given = resolve(kind, SETTINGS, raw, UNSUPPORTED)
        return cls.from_values(values, given)

    @classmethod
    def from_values(cls, values: Mapping[str, Any], given: set[str]) -> ClientSecurity:
        """From the resolved SETTINGS of a consumer's or producer's configuration."""
        protocol = values["security.protocol"]
        if protocol == "PLAINTEXT":
            return PLAINTEXT
        context = _ssl_context(values, given) if protocol.endswith("SSL") else None
        if not protocol.startswith("SASL_"):
            return cls(protocol, context)
        mechanism = values["sasl.mechanism"]
        if mechanism == "GSSAPI":
            raise ConfigError(
                "sasl.mechanism GSSAPI (Kerberos, the Java default) is not supported; "
                f"set sasl.mechanism to one of {', '.join(MECHANISMS)}"
            )
        if mechanism not in MECHANISMS:
            raise ConfigError(f"sasl.mechanism={mechanism!r} is not one of {', '.join(MECHANISMS)}")
        jaas = values["sasl.jaas.config"]
        if jaas is None:
            raise ConfigError(f"{protocol} with {mechanism} needs sasl.jaas.config")
        module, options = parse_jaas(jaas)
        if module not in LOGIN_MODULES:
            raise ConfigError(f"sasl.jaas.config: login module {module} is not supported")
        if not options.get("username") or "password" not in options:
            raise ConfigError("sasl.jaas.config needs username and password")
        return cls(protocol, context, mechanism, options["username"], options["password"])

    async def authenticate(self, conn: Connection) -> None:
        """The SASL exchange on a freshly negotiated connection."""
        mechanism = self.mechanism
        if mechanism is None:
            return
        handshake = await conn.send(
            SaslHandshakeRequest(mechanism=mechanism),
            version=conn.version_for(apis.SASL_HANDSHAKE, 1, 1),
        )
        if handshake.error_code != ErrorCode.none:
            raise AuthenticationFailedError(
                handshake.error_code, _handshake_refusal(handshake, mechanism)
            )
        version = conn.version_for(apis.SASL_AUTHENTICATE, 0, 2)
        if mechanism == "PLAIN":
            await _step(conn, version, f"\x00{self.username}\x00{self.password}".encode())
            return
        scram = ScramClient(mechanism, self.username, self.password)
        try:
            server_first = await _step(conn, version, scram.first())
            server_final = await _step(conn, version, scram.final(server_first))
            scram.verify(server_final)
        except ValueError as e:  # ScramFailure, or a server message we cannot read
            raise AuthenticationFailedError(ErrorCode.sasl_authentication_failed, str(e)) from None


PLAINTEXT = ClientSecurity()


def _handshake_refusal(handshake: Any, mechanism: str) -> str:
    enabled = list(handshake.mechanisms)
    if handshake.error_code == ErrorCode.unsupported_sasl_mechanism:
        return f"SASL mechanism {mechanism} is not enabled on the broker; it enables {enabled}"
    if handshake.error_code == ErrorCode.illegal_sasl_state:
        return (
            f"unexpected SASL handshake for {mechanism} at this point of the connection; "
            f"the broker enables {enabled}"
        )
    return (
        f"SASL handshake for {mechanism} failed with {handshake.error_code.name.upper()}; "
        f"the broker enables {enabled}"
    )


async def _step(conn: Connection, version: int, token: bytes) -> bytes:
    response = await conn.send(SaslAuthenticateRequest(auth_bytes=token), version=version)
    if response.error_code != ErrorCode.none:
        raise AuthenticationFailedError(response.error_code, response.error_message)
    return bytes(response.auth_bytes)


def _ssl_context(values: Mapping[str, Any], given: set[str]) -> ssl.SSLContext:
    for kind in ("truststore", "keystore"):
        # Java's default type is JKS; an unstated type is read as the PEM it must be here.
        if f"ssl.{kind}.type" in given and values[f"ssl.{kind}.type"] != "PEM":
            raise ConfigError(f"ssl.{kind}.type={values[f'ssl.{kind}.type']}: {_PEM_ONLY}")
    algorithm = values["ssl.endpoint.identification.algorithm"]
    if algorithm.lower() not in ("https", ""):
        raise ConfigError(
            f"ssl.endpoint.identification.algorithm={algorithm!r}: expected https or empty"
        )
    trust, trusted = values["ssl.truststore.location"], values["ssl.truststore.certificates"]
    keys, key, chain = (
        values["ssl.keystore.location"],
        values["ssl.keystore.key"],
        values["ssl.keystore.certificate.chain"],
    )
    if trust is not None and trusted is not None:
        raise ConfigError("ssl.truststore.location and ssl.truststore.certificates are both set")
    if keys is not None and (key is not None or chain is not None):
        raise ConfigError(
            "ssl.keystore.location and ssl.keystore.key/certificate.chain are both set"
        )
    if (key is None) != (chain is None):
        raise ConfigError("ssl.keystore.key and ssl.keystore.certificate.chain go together")
    versions = _versions(values["ssl.enabled.protocols"], values["ssl.protocol"])
    try:
        # A trust store replaces the system's CAs, as it replaces the JVM's in Java.
        context = ssl.create_default_context(
            ssl.Purpose.SERVER_AUTH,
            cafile=trust,
            cadata=inline_pem(trusted) if trusted is not None else None,
        )
        context.check_hostname = algorithm.lower() == "https"
        context.minimum_version, context.maximum_version = versions[0], versions[-1]
        if keys is not None:
            context.load_cert_chain(Path(keys), password=_key_password(values, keys))
        elif key is not None and chain is not None:
            password = _key_password(values, "ssl.keystore.key")
            load_inline_key_store(context, key, chain, password)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"cannot set up TLS: {e}") from None
    if values["ssl.cipher.suites"]:
        _set_ciphers(context, values["ssl.cipher.suites"])
    return context


def _versions(enabled: tuple[str, ...], protocol: str) -> list[ssl.TLSVersion]:
    """The TLS versions to offer: ssl.enabled.protocols, none newer than
    ssl.protocol (TLS: no cap), as Kafka documents ssl.protocol."""
    cap = TLS_VERSIONS.get(protocol, max(TLS_VERSIONS.values()))
    versions = sorted(v for v in map(TLS_VERSIONS.__getitem__, enabled) if v <= cap)
    if not versions:
        raise ConfigError(
            f"no TLS version left: ssl.enabled.protocols={','.join(enabled)} "
            f"with ssl.protocol={protocol}"
        )
    return versions


def _set_ciphers(context: ssl.SSLContext, suites: tuple[str, ...]) -> None:
    """ssl.cipher.suites limits TLS 1.2's suites; TLS 1.3 keeps OpenSSL's (those Java has too)."""
    try:
        context.set_ciphers(":".join(suites))
    except ssl.SSLError:
        raise ConfigError(
            f"ssl.cipher.suites={','.join(suites)}: no TLS 1.2 cipher suite can be selected; "
            "the names are OpenSSL's (ECDHE-RSA-AES128-GCM-SHA256), not Java's "
            "(TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)"
        ) from None


def _key_password(values: Mapping[str, Any], store: str) -> str | Callable[[], str]:
    """The key's password; without one, a callback that refuses: OpenSSL's own
    would ask on the terminal, or fail with EINVAL where there is none."""
    password: str | None = values["ssl.key.password"]
    if password is not None:
        return password

    def missing() -> str:
        raise ConfigError(f"the private key in {store} is encrypted: set ssl.key.password")

    return missing
