"""The SASL keys of each listener, as Kafka reads them for a listener whose
protocol is SASL_PLAINTEXT or SASL_SSL:

- ``listener.name.<listener>.<mechanism>.sasl.jaas.config``: the mechanism's JAAS
  line on that listener (for PLAIN, its ``user_<name>="<password>"`` users);
- ``listener.name.<listener>.sasl.enabled.mechanisms``: the listener's mechanisms,
  read before the broker-wide ``sasl.enabled.mechanisms``;
- ``listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class``: how
  OAUTHBEARER tokens are checked there (Kafka's secured or unsecured handler);
- ``listener.name.<listener>.[oauthbearer.]sasl.oauthbearer.*``: the OAUTHBEARER
  options of that listener, the mechanism-prefixed form first, then the
  listener's, then the broker-wide key.

Listener and mechanism names are written in lower case in these keys, as in Kafka.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kgroups.config.errors import ConfigError

SASL_MECHANISMS = frozenset({"GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"})
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})
_JAAS = re.compile(r"listener\.name\.([^.]+)\.([^.]+)\.sasl\.jaas\.config")
_MECHANISMS = re.compile(r"listener\.name\.([^.]+)\.sasl\.enabled\.mechanisms")
_CALLBACK_HANDLER = re.compile(
    r"listener\.name\.([^.]+)\.([^.]+)\.sasl\.server\.callback\.handler\.class"
)
_OAUTH_OPTION = re.compile(r"listener\.name\.([^.]+)\.(oauthbearer\.)?(sasl\.oauthbearer\..+)")

_OAUTH = "org.apache.kafka.common.security.oauthbearer."
# Kafka 4.x's handler that checks signed tokens against a JWKS (KIP-768).
SECURED_HANDLER = _OAUTH + "OAuthBearerValidatorCallbackHandler"
# Kafka's default: unsigned tokens, for development.
UNSECURED_HANDLERS = frozenset(
    {
        _OAUTH + "internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler",
        _OAUTH + "internal.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler",
    }
)
# sasl.oauthbearer.jwt.validator.class: the default picks the JWKS validator
# when a JWKS is configured, as in Kafka 4.1.2 and later.
DEFAULT_JWT_VALIDATOR = _OAUTH + "DefaultJwtValidator"
BROKER_JWT_VALIDATOR = _OAUTH + "BrokerJwtValidator"


def sasl_mechanisms(value: str) -> str:
    """``sasl.enabled.mechanisms``: Kafka's mechanism names, comma-separated."""
    for name in filter(None, (v.strip() for v in value.split(","))):
        if name not in SASL_MECHANISMS:
            raise ValueError(f"unknown SASL mechanism {name!r}")
    return value.strip()


class ListenerSasl:
    """Each listener's own JAAS lines and mechanism list."""

    def __init__(self) -> None:
        self._jaas: dict[tuple[str, str], str] = {}
        """Per (lower-case listener name, mechanism), its JAAS line."""
        self._mechanisms: dict[str, str] = {}
        """Per lower-case listener name, its own sasl.enabled.mechanisms."""
        self._handlers: dict[str, str] = {}
        """Per lower-case listener name, its OAUTHBEARER callback handler class."""
        self._oauth: dict[str, object] = {}
        """Per listener.name.<listener>.[oauthbearer.]sasl.oauthbearer.* key, its value."""

    @staticmethod
    def oauth_option(key: str) -> str | None:
        """The sasl.oauthbearer.* setting a listener's OAUTHBEARER key names, else None."""
        m = _OAUTH_OPTION.fullmatch(key)
        return None if m is None else m.group(3)

    def set_oauth(self, key: str, value: object) -> None:
        """Keep a listener's sasl.oauthbearer.* key (``oauth_option`` named it)."""
        m = _OAUTH_OPTION.fullmatch(key)
        assert m is not None, key
        self._oauth[f"listener.name.{m.group(1).lower()}.{m.group(2) or ''}{m.group(3)}"] = value

    def oauth(self, listener: str, setting: str, broker_wide: object) -> object:
        """A sasl.oauthbearer.* value on `listener`, as Kafka looks it up."""
        prefix = f"listener.name.{listener.lower()}."
        for key in (f"{prefix}oauthbearer.{setting}", prefix + setting):
            if key in self._oauth:
                return self._oauth[key]
        return broker_wide

    def oauth_key(self, listener: str, setting: str) -> str:
        """The key `listener` reads a sasl.oauthbearer.* value from."""
        prefix = f"listener.name.{listener.lower()}."
        for key in (f"{prefix}oauthbearer.{setting}", prefix + setting):
            if key in self._oauth:
                return key
        return setting

    def callback_handler(self, listener: str) -> str | None:
        """The OAUTHBEARER server callback handler class of `listener`, if set."""
        return self._handlers.get(listener.lower())

    def read(self, key: str, raw: str) -> bool:
        """Keep ``key`` when it is a per-listener SASL key; False when it is not one."""
        jaas = _JAAS.fullmatch(key)
        if jaas is not None:
            mechanism = jaas.group(2).upper()
            if mechanism not in SASL_MECHANISMS:
                raise ConfigError(f"{key} names an unknown SASL mechanism {mechanism!r}")
            self._jaas[(jaas.group(1).lower(), mechanism)] = raw.strip()
            return True
        handler = _CALLBACK_HANDLER.fullmatch(key)
        if handler is not None:
            value = raw.strip()
            if handler.group(2) != "oauthbearer":
                raise ConfigError(f"{key}: only OAUTHBEARER's server callback handler can be set")
            if value != SECURED_HANDLER and value not in UNSECURED_HANDLERS:
                raise ConfigError(
                    f"invalid value {value!r} for {key}: expected {SECURED_HANDLER} "
                    "or Kafka's unsecured OAuthBearerUnsecuredValidatorCallbackHandler"
                )
            self._handlers[handler.group(1).lower()] = value
            return True
        mechanisms = _MECHANISMS.fullmatch(key)
        if mechanisms is not None:
            try:
                self._mechanisms[mechanisms.group(1).lower()] = sasl_mechanisms(raw)
            except ValueError as e:
                raise ConfigError(f"invalid value {raw!r} for {key}: {e}") from None
            return True
        return False

    def jaas(self, listener: str, mechanism: str) -> str | None:
        """The JAAS line of `mechanism` on `listener`, if one is set."""
        return self._jaas.get((listener.lower(), mechanism))

    def mechanisms(self, listener: str, broker_wide: str) -> str:
        """The sasl.enabled.mechanisms of `listener`: its own, else `broker_wide`."""
        return self._mechanisms.get(listener.lower(), broker_wide)

    def scoped_values(self) -> dict[str, str]:
        """Every per-listener SASL key set, in its lower-case form, with its value."""
        jaas = {
            f"listener.name.{listener}.{mechanism.lower()}.sasl.jaas.config": line
            for (listener, mechanism), line in sorted(self._jaas.items())
        }
        mechanisms = {
            f"listener.name.{listener}.sasl.enabled.mechanisms": value
            for listener, value in sorted(self._mechanisms.items())
        }
        handlers = {
            f"listener.name.{listener}.oauthbearer.sasl.server.callback.handler.class": value
            for listener, value in sorted(self._handlers.items())
        }
        oauth = {key: str(value) for key, value in sorted(self._oauth.items())}
        return jaas | mechanisms | handlers | oauth

    def check(self, protocols: Mapping[str, str]) -> None:
        """Refuse a key naming no listener, or a listener without SASL; `protocols`
        gives each listener's security protocol by its name."""
        by_lower = {name.lower(): (name, protocol) for name, protocol in protocols.items()}
        for key in self.scoped_values():
            listener = key.split(".")[2]
            if listener not in by_lower:
                raise ConfigError(
                    f"{key} names no listener: the listener names are "
                    f"{', '.join(sorted(by_lower))} (written in lower case)"
                )
            name, protocol = by_lower[listener]
            if protocol not in SASL_PROTOCOLS:
                raise ConfigError(
                    f"{key}: listener {name} does not use SASL (its protocol is {protocol})"
                )
