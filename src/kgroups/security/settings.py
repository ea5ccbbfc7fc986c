"""The broker's SASL settings, read once at start."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from kgroups.security.credentials import CredentialStore
from kgroups.security.mechanisms import SUPPORTED_MECHANISMS
from kgroups.server.config import BrokerConfig

log = logging.getLogger(__name__)

PLAIN_JAAS_KEYS = {
    "SASL_PLAINTEXT": "listener.name.sasl_plaintext.plain.sasl.jaas.config",
    "SASL_SSL": "listener.name.sasl_ssl.plain.sasl.jaas.config",
}
_JAAS_USER = re.compile(r'user_([^\s=]+)\s*=\s*"([^"]*)"')


def jaas_plain_users(jaas: str) -> dict[str, str]:
    """The user_<name>="<password>" options of a PlainLoginModule JAAS line."""
    return dict(_JAAS_USER.findall(jaas))


class SaslSettings:
    def __init__(self, config: BrokerConfig, data_dir: Path) -> None:
        named = [m.strip() for m in config.get_str("sasl.enabled.mechanisms").split(",")]
        self.enabled_mechanisms = tuple(m for m in named if m in SUPPORTED_MECHANISMS)
        unserved = [m for m in named if m and m not in SUPPORTED_MECHANISMS]
        if unserved:
            log.warning("SASL mechanisms not served by kgroups: %s", ", ".join(unserved))
        # Listener name -> PLAIN users of its JAAS line.
        self.jaas_users: dict[str, dict[str, str]] = {}
        for listener, key in PLAIN_JAAS_KEYS.items():
            jaas = config.get(key)
            self.jaas_users[listener] = jaas_plain_users(jaas) if isinstance(jaas, str) else {}
        self.credentials = CredentialStore(data_dir)
