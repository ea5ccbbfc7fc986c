"""DescribeConfigs on the broker never hands out its secrets: password-type keys,
broker-wide or per listener, are answered as sensitive with no value, as Kafka does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kio.schema.describe_configs.v4 import DescribeConfigsRequest
from kio.schema.describe_configs.v4.request import DescribeConfigsResource

from kgroups.client.connection import BrokerConnection
from kgroups.config.broker_config import BrokerConfig
from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8
from kgroups.testing.thread_broker import ThreadBroker

BROKER = i8(4)
SECRETS = {
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-s3cr3t" user_alice="alice-s3cr3t";'
    ),
    "listener.name.clients.scram-sha-256.sasl.jaas.config": (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="admin" password="admin-s3cr3t";'
    ),
    "ssl.key.password": "key-s3cr3t",
    "ssl.keystore.password": "keystore-s3cr3t",
    "ssl.truststore.password": "truststore-s3cr3t",
    "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----\\nprivate-s3cr3t\\n-----END PRIVATE KEY-----",
    "listener.name.plaintext.ssl.key.password": "listener-key-s3cr3t",
}


async def _describe(bootstrap: str, keys: tuple[str, ...] | None) -> dict[str, Any]:
    host, port = bootstrap.split(":")
    conn = await BrokerConnection.open(host, int(port))
    try:
        response = await conn.send(
            DescribeConfigsRequest(
                resources=(
                    DescribeConfigsResource(
                        resource_type=BROKER, resource_name="0", configuration_keys=keys
                    ),
                ),
                include_synonyms=False,
                include_documentation=False,
            )
        )
    finally:
        await conn.close()
    (result,) = response.results
    assert result.error_code == ErrorCode.none
    return {c.name: c for c in result.configs}


def test_broker_secrets_are_sensitive_and_have_no_value(tmp_path: Path) -> None:
    props = {
        "listeners": ("PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CLIENTS://127.0.0.1:0"),
        "listener.security.protocol.map": (
            "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CLIENTS:SASL_PLAINTEXT"
        ),
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.clients.sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "listener.name.plaintext.ssl.client.auth": "required",
        **SECRETS,
    }
    with_secrets = ThreadBroker(tmp_path, props).start()
    try:
        described = with_secrets.run(_describe(with_secrets.bootstrap, None))
        chosen = with_secrets.run(_describe(with_secrets.bootstrap, tuple(SECRETS)))
    finally:
        with_secrets.stop()
    for key in SECRETS:
        assert described[key].is_sensitive, key
        assert described[key].value is None, key
        assert chosen[key].value is None and chosen[key].is_sensitive, key
    for entry in described.values():
        assert not any(s in (entry.value or "") for s in ("s3cr3t", "PRIVATE KEY")), entry.name
    # A per-listener TLS key that was set is listed, with its value when not a secret.
    scoped = described["listener.name.plaintext.ssl.client.auth"]
    assert (scoped.value, scoped.is_sensitive) == ("required", False)
    mechanisms = described["listener.name.clients.sasl.enabled.mechanisms"]
    assert (mechanisms.value, mechanisms.is_sensitive) == ("SCRAM-SHA-256", False)
    assert (described["log.dirs"].value, described["log.dirs"].is_sensitive) == (
        str(tmp_path),
        False,
    )


def test_the_cluster_store_url_is_sensitive() -> None:
    # A PostgreSQL URL may carry the store's password.
    config = BrokerConfig({"cluster.store.url": "postgresql://kg:store-secret@db/kgroups"})
    described = config.describe()
    assert described["cluster.store.url"] is None
    assert described["broker.id"] == "0"
