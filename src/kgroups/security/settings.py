"""The broker's SASL settings, read once at start: per SASL listener, its
mechanisms, its PLAIN users (config/sasl_listener_keys.py) and how it checks
OAUTHBEARER tokens (oauth_settings.py); and whether PLAIN also takes the SCRAM
store's users (off, as in Kafka)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path

from kgroups.config.broker_config import BrokerConfig
from kgroups.config.sasl_listener_keys import SASL_PROTOCOLS
from kgroups.security.credentials import CredentialStore
from kgroups.security.mechanisms import SUPPORTED_MECHANISMS
from kgroups.security.oauth_settings import OAuthValidators
from kgroups.security.oauth_tokens import TokenValidator

log = logging.getLogger(__name__)

_JAAS_USER = re.compile(r'user_([^\s=]+)\s*=\s*"([^"]*)"')


def jaas_plain_users(jaas: str) -> dict[str, str]:
    """The user_<name>="<password>" options of a PlainLoginModule JAAS line."""
    return dict(_JAAS_USER.findall(jaas))


def _served(named: str, listener: str) -> tuple[str, ...]:
    """The mechanisms of a sasl.enabled.mechanisms value that kgroups serves."""
    names = [m.strip() for m in named.split(",") if m.strip()]
    unserved = [m for m in names if m not in SUPPORTED_MECHANISMS]
    if unserved:
        log.warning(
            "SASL mechanisms not served by kgroups on listener %s: %s",
            listener,
            ", ".join(unserved),
        )
    return tuple(m for m in names if m in SUPPORTED_MECHANISMS)


class SaslSettings:
    def __init__(self, config: BrokerConfig, data_dir: Path) -> None:
        broker_wide = config.get_str("sasl.enabled.mechanisms")
        keys = config.listener_sasl
        self._mechanisms: dict[str, tuple[str, ...]] = {}
        self._plain_users: dict[str, dict[str, str]] = {}
        for spec in config.listener_specs():
            if spec.protocol in SASL_PROTOCOLS:
                self._mechanisms[spec.name] = _served(
                    keys.mechanisms(spec.name, broker_wide), spec.name
                )
                self._plain_users[spec.name] = jaas_plain_users(keys.jaas(spec.name, "PLAIN") or "")
        self.credentials = CredentialStore(data_dir)
        # Kafka's PLAIN knows only the JAAS line's users; kgroups may add SCRAM's.
        self.plain_scram_users = config.get_bool("sasl.plain.scram.credentials.enable")
        self.oauth = OAuthValidators(config, self._mechanisms)

    def mechanisms(self, listener: str) -> tuple[str, ...]:
        """The mechanisms served on `listener`; none on a listener without SASL."""
        return self._mechanisms.get(listener, ())

    def oauth_validator(self, listener: str) -> TokenValidator:
        """How `listener` checks OAUTHBEARER tokens (see oauth_settings)."""
        return self.oauth.validator(listener)

    def plain_users(self, listener: str) -> Mapping[str, str]:
        """The PLAIN users of `listener`'s own JAAS line."""
        return self._plain_users.get(listener, {})
