"""Kafka's OAUTHBEARER keys of a SASL listener: the mechanism-prefixed form wins
over the listener's, which wins over the broker-wide key; keys naming no SASL
listener, or handlers kgroups does not have, stop the broker."""

from __future__ import annotations

import pytest

from kgroups.config.broker_config import BrokerConfig, ConfigError

LISTENERS = {
    "listeners": "CLIENTS://127.0.0.1:0,PLAIN://127.0.0.1:0",
    "listener.security.protocol.map": "CLIENTS:SASL_SSL,PLAIN:PLAINTEXT",
    "ssl.keystore.type": "PEM",
    "ssl.keystore.location": "/unused.pem",
}
HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


def test_the_most_specific_key_wins() -> None:
    config = BrokerConfig(
        {
            **LISTENERS,
            "sasl.oauthbearer.clock.skew.seconds": "5",
            "sasl.oauthbearer.sub.claim.name": "client_id",
            "sasl.oauthbearer.expected.issuer": "https://broker-wide",
            "listener.name.clients.sasl.oauthbearer.expected.issuer": "https://listener",
            "listener.name.clients.sasl.oauthbearer.sub.claim.name": "azp",
            "listener.name.clients.oauthbearer.sasl.oauthbearer.sub.claim.name": "oid",
            "listener.name.clients.oauthbearer.sasl.server.callback.handler.class": HANDLER,
        }
    )
    sasl = config.listener_sasl

    def option(name: str) -> object:
        return sasl.oauth("CLIENTS", name, config.get(name))

    assert option("sasl.oauthbearer.sub.claim.name") == "oid"
    assert option("sasl.oauthbearer.expected.issuer") == "https://listener"
    assert option("sasl.oauthbearer.clock.skew.seconds") == 5
    assert option("sasl.oauthbearer.scope.claim.name") == "scope"
    assert sasl.callback_handler("CLIENTS") == HANDLER
    described = config.describe()
    assert described["listener.name.clients.oauthbearer.sasl.oauthbearer.sub.claim.name"] == "oid"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("listener.name.plain.sasl.oauthbearer.expected.issuer", "x", "does not use SASL"),
        (
            "listener.name.other.oauthbearer.sasl.server.callback.handler.class",
            HANDLER,
            "no listener",
        ),
        (
            "listener.name.clients.oauthbearer.sasl.server.callback.handler.class",
            "com.Mine",
            "invalid",
        ),
        ("listener.name.clients.plain.sasl.server.callback.handler.class", HANDLER, "OAUTHBEARER"),
        ("listener.name.clients.sasl.oauthbearer.clock.skew.seconds", "-1", "at least 0"),
    ],
    ids=["not-sasl", "no-listener", "unknown-handler", "plain-handler", "negative-skew"],
)
def test_keys_that_cannot_work_stop_the_broker(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BrokerConfig({**LISTENERS, key: value})
