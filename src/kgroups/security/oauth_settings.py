"""Which validator checks OAUTHBEARER tokens on each SASL listener, as Kafka
4.x decides it:

- ``listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class``
  unset (or Kafka's unsecured handler): unsigned tokens, for development;
- set to ``OAuthBearerValidatorCallbackHandler``: signed tokens checked against
  the JWKS of ``sasl.oauthbearer.jwks.endpoint.url`` (``DefaultJwtValidator``
  picks ``BrokerJwtValidator`` when a JWKS is configured, as in Kafka 4.1.2 and
  later). Without a JWKS the broker refuses to start: it does not accept tokens
  whose signature it cannot check.

Each ``sasl.oauthbearer.*`` option is read as the listener's mechanism-prefixed
key, then its listener-prefixed key, then the broker-wide key. Signed tokens
need the ``cryptography`` package, imported only then.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from kgroups.config.broker_config import BrokerConfig
from kgroups.config.errors import ConfigError
from kgroups.config.sasl_listener_keys import SECURED_HANDLER
from kgroups.security.oauth_tokens import TokenValidator, unsecured_token

if TYPE_CHECKING:
    from kgroups.security.jwks_source import JwksSource

log = logging.getLogger(__name__)

_JWKS_URL = "sasl.oauthbearer.jwks.endpoint.url"


class OAuthValidators:
    def __init__(self, config: BrokerConfig, listeners: dict[str, tuple[str, ...]]) -> None:
        """`listeners`: each SASL listener's mechanisms."""
        self._validators: dict[str, TokenValidator] = {}
        self._sources: dict[tuple[object, ...], JwksSource] = {}
        for listener, mechanisms in listeners.items():
            if "OAUTHBEARER" in mechanisms:
                self._validators[listener] = self._validator(config, listener)

    def validator(self, listener: str) -> TokenValidator:
        return self._validators.get(listener, unsecured_token)

    async def start(self) -> None:
        """Read every JWKS once; ConfigError when one cannot be read."""
        for source in self._sources.values():
            await source.start()

    def background(self) -> list[Coroutine[Any, Any, None]]:
        """The loops that keep each JWKS fresh (none without signed tokens)."""
        return [source.refresh_loop() for source in self._sources.values()]

    def _validator(self, config: BrokerConfig, listener: str) -> TokenValidator:
        sasl = config.listener_sasl

        def option(name: str) -> object:
            return sasl.oauth(listener, name, config.get(name))

        url = option(_JWKS_URL)
        handler_key = (
            f"listener.name.{listener.lower()}.oauthbearer.sasl.server.callback.handler.class"
        )
        if sasl.callback_handler(listener) != SECURED_HANDLER:
            if url:
                log.warning(
                    "listener %s takes unsecured OAUTHBEARER tokens although %s is set: "
                    "set %s=%s to check signatures",
                    listener,
                    sasl.oauth_key(listener, _JWKS_URL),
                    handler_key,
                    SECURED_HANDLER,
                )
            return unsecured_token
        if not isinstance(url, str) or not url:
            raise ConfigError(
                f"{handler_key} checks signed tokens: set {_JWKS_URL} (or its "
                f"listener.name.{listener.lower()}. form) to the issuer's JWKS"
            )
        try:
            from kgroups.security.jwks_source import JwksSource
            from kgroups.security.jwt_validator import ClaimRules, SignedTokenValidator
        except ImportError as e:
            raise ConfigError(
                f"signed OAUTHBEARER tokens ({handler_key}) need the Python package "
                f"cryptography, which is not installed ({e}): pip install 'kgroups[oauth]'"
            ) from None
        timing = tuple(
            option(f"sasl.oauthbearer.jwks.endpoint.{name}")
            for name in ("refresh.ms", "retry.backoff.ms", "retry.backoff.max.ms")
        )
        refresh_ms, backoff_ms, backoff_max_ms = (int(str(v)) for v in timing)
        source = self._sources.get((url, *timing))
        if source is None:
            source = JwksSource(
                url,
                sasl.oauth_key(listener, _JWKS_URL),
                refresh_ms=refresh_ms,
                backoff_ms=backoff_ms,
                backoff_max_ms=backoff_max_ms,
            )
            self._sources[(url, *timing)] = source
        audience = option("sasl.oauthbearer.expected.audience")
        issuer = option("sasl.oauthbearer.expected.issuer")
        rules = ClaimRules(
            audience=frozenset(a.strip() for a in str(audience or "").split(",") if a.strip()),
            issuer=issuer if isinstance(issuer, str) and issuer else None,
            sub_claim=str(option("sasl.oauthbearer.sub.claim.name")),
            scope_claim=str(option("sasl.oauthbearer.scope.claim.name")),
            clock_skew_s=int(str(option("sasl.oauthbearer.clock.skew.seconds"))),
        )
        return SignedTokenValidator(source.keys_for, rules)
