"""The TLS settings of each listener: Kafka's listener.name.<listener>.ssl.* keys,
read before the broker-wide ssl.* key of the same name, and the checks a TLS
listener's settings must pass before the broker starts.

Listener names are written in lower case in these keys, as in Kafka.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from kgroups.config.errors import ConfigError

TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")
_SCOPED = re.compile(r"listener\.name\.([^.]+)\.(ssl\..+)")
_TRUST_STORE = ("ssl.truststore.location", "ssl.truststore.certificates")
_INLINE_KEY_STORE = ("ssl.keystore.key", "ssl.keystore.certificate.chain")


def tls_versions(value: str) -> str:
    """``ssl.enabled.protocols``: TLS 1.2 and/or 1.3, comma-separated."""
    versions = [v.strip() for v in value.split(",") if v.strip()]
    if not versions or any(v not in TLS_VERSIONS for v in versions):
        raise ValueError(f"expected a list of {', '.join(TLS_VERSIONS)} (older ones are refused)")
    return ",".join(versions)


def scoped_ssl_key(key: str) -> tuple[str, str] | None:
    """``listener.name.<listener>.ssl.<x>`` -> (listener, ``ssl.<x>``), else None."""
    m = _SCOPED.fullmatch(key)
    return None if m is None else (m.group(1), m.group(2))


class ListenerTls:
    """Each listener's own ssl.* values over the broker-wide ones."""

    def __init__(self, broker_wide: Mapping[str, object]) -> None:
        self._broker_wide = broker_wide
        self._own: dict[str, dict[str, object]] = {}
        """Per lower-case listener name, its own ssl.* values."""

    def set(self, listener: str, key: str, value: object) -> None:
        self._own.setdefault(listener.lower(), {})[key] = value

    def get(self, listener: str, key: str) -> object:
        """An ssl.* value for one listener: its own, else the broker-wide key's."""
        own = self._own.get(listener.lower(), {})
        return own[key] if key in own else self._broker_wide[key]

    def key_of(self, listener: str, key: str) -> str:
        """The key `listener` reads an ssl.* value from: its own form when set."""
        scoped = f"listener.name.{listener.lower()}.{key}"
        return scoped if key in self._own.get(listener.lower(), {}) else key

    def scoped_values(self) -> dict[str, object]:
        """Every listener.name.<listener>.ssl.* key set, with its value."""
        return {
            f"listener.name.{listener}.{key}": value
            for listener, values in sorted(self._own.items())
            for key, value in values.items()
        }

    def check(self, listener_names: Iterable[str], tls_listeners: Iterable[str]) -> None:
        """Refuse keys of unknown listeners, and TLS listeners that cannot serve."""
        lowered = {name.lower() for name in listener_names}
        for listener in self._own:
            if listener not in lowered:
                raise ConfigError(
                    f"listener.name.{listener}.ssl.* names no listener: the listener names "
                    f"are {', '.join(sorted(lowered))} (written in lower case)"
                )
        for listener in tls_listeners:
            self._check_listener(listener)

    def _check_listener(self, listener: str) -> None:
        def present(key: str) -> bool:
            return bool(self.get(listener, key))

        # As in Kafka, the trust store's type matters only when there is one.
        checked = ["ssl.keystore.type"]
        if any(map(present, _TRUST_STORE)):
            checked.append("ssl.truststore.type")
        for key in checked:
            if self.get(listener, key) != "PEM":
                raise ConfigError(
                    f"{self.key_of(listener, key)} must be PEM for listener {listener}: "
                    "other key store formats are not read"
                )
        if not present("ssl.keystore.location") and not all(map(present, _INLINE_KEY_STORE)):
            scoped = f"listener.name.{listener.lower()}"
            raise ConfigError(
                f"TLS listener {listener} has no key store: set ssl.keystore.location "
                f"(or {scoped}.ssl.keystore.location), or ssl.keystore.key and "
                "ssl.keystore.certificate.chain"
            )
        if self.get(listener, "ssl.client.auth") != "none" and not any(map(present, _TRUST_STORE)):
            raise ConfigError(
                f"{self.key_of(listener, 'ssl.client.auth')} of listener {listener} needs "
                "ssl.truststore.location or ssl.truststore.certificates"
            )
