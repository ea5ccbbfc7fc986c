"""How this broker reaches the other brokers of its cluster: over its
inter-broker listener, as a client of that listener's protocol.

As in Kafka, the broker's own keys say how: on SSL listeners its key store
and trust store (the listener's own ``listener.name.<l>.ssl.*`` first), on
SASL listeners ``sasl.mechanism.inter.broker.protocol`` with the ``username``
and ``password`` of that mechanism's JAAS line on the listener.
"""

from __future__ import annotations

from kgroups.client.config_schema import ConfigError as ClientConfigError
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.config.broker_config import BrokerConfig
from kgroups.config.errors import ConfigError

__all__ = ["peer_security"]

_SSL_KEYS = (
    "ssl.keystore.location",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.key.password",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.endpoint.identification.algorithm",
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.cipher.suites",
)


def peer_security(config: BrokerConfig) -> ClientSecurity:
    listener = config.inter_broker_listener()
    protocol = next(s.protocol for s in config.listener_specs() if s.name == listener)
    if protocol == "PLAINTEXT":
        return PLAINTEXT
    raw: dict[str, object] = {"security.protocol": protocol}
    if protocol.endswith("SSL"):
        for key in _SSL_KEYS:
            value = config.tls.get(listener, key)
            if value is not None:
                raw[key] = value
    if protocol.startswith("SASL_"):
        mechanism = config.get_str("sasl.mechanism.inter.broker.protocol")
        jaas = config.listener_sasl.jaas(listener, mechanism)
        raw["sasl.mechanism"] = mechanism
        if jaas is not None:
            raw["sasl.jaas.config"] = jaas
    try:
        return ClientSecurity.from_config(raw)
    except ClientConfigError as e:
        raise ConfigError(f"brokers cannot reach each other on listener {listener}: {e}") from None
