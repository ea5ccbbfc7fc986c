"""Broker configs that are secrets: Kafka's PASSWORD-type keys.

DescribeConfigs answers them as sensitive with no value, and the broker never
logs them. A per-listener key (``listener.name.<name>.<key>``) is a secret when
its base key is one, as Kafka reads per-listener keys with the base key's type.
"""

from __future__ import annotations

import re

PASSWORD_KEYS = frozenset(
    {
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.truststore.password",
        "ssl.keystore.key",
        # Kafka types the inline PEM stores as passwords too.
        "ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
        "sasl.jaas.config",
        # Not a Kafka key: a PostgreSQL URL may carry the store's password
        # (postgresql://user:password@host/db), and whether it does is not
        # something a caller should learn from the answer.
        "cluster.store.url",
    }
)

_LISTENER_SCOPED = re.compile(r"listener\.name\.[^.]+\.(.+)")


def is_sensitive(key: str) -> bool:
    """Whether the value of broker config `key` is a secret."""
    if key in PASSWORD_KEYS or key.endswith(".sasl.jaas.config"):
        return True
    scoped = _LISTENER_SCOPED.fullmatch(key)
    return scoped is not None and scoped.group(1) in PASSWORD_KEYS
