"""Kafka's per-listener TLS keys: listener.name.<name>.ssl.* before ssl.*."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kgroups.config.broker_config import BrokerConfig, ConfigError
from kgroups.testing.thread_broker import ThreadBroker

from certificates import Authority


class TwoAuthorities:
    def __init__(self, directory: Path) -> None:
        self.public = Authority(directory / "public", "Public CA")
        self.public_server = self.public.server()
        self.internal = Authority(directory / "internal", "Internal CA")
        self.internal_server = self.internal.server()
        self.internal_client = self.internal.client(cn="svc")


@pytest.fixture
def cas(tmp_path: Path) -> TwoAuthorities:
    return TwoAuthorities(tmp_path / "pki")


def props(cas: TwoAuthorities) -> dict[str, str]:
    """SSL (broker-wide keys, no client certificate) and INTERNAL (its own
    certificate and CA, client certificate required)."""
    return {
        "listeners": "SSL://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "SSL:SSL,INTERNAL:SSL",
        "inter.broker.listener.name": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(cas.public_server.both),
        "ssl.truststore.type": "PEM",
        "listener.name.internal.ssl.keystore.location": str(cas.internal_server.both),
        "listener.name.internal.ssl.truststore.location": str(cas.internal.cert),
        "listener.name.internal.ssl.client.auth": "required",
    }


@pytest.fixture
def broker(tmp_path: Path, cas: TwoAuthorities) -> Iterator[ThreadBroker]:
    broker = ThreadBroker(tmp_path / "data", props(cas)).start()
    yield broker
    broker.stop()


def topics(port: int, ca: Path, timeout: float = 20, **extra: str) -> list[str]:
    admin = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "SSL",
            "ssl.ca.location": str(ca),
            **extra,
        }
    )
    return sorted(admin.list_topics(timeout=timeout).topics)


def refused(port: int, ca: Path, **extra: str) -> bool:
    """Whether the TLS handshake fails (librdkafka retries it until the timeout)."""
    try:
        topics(port, ca, timeout=2, **extra)
    except KafkaException:
        return True
    return False


def test_each_listener_serves_its_own_certificate_and_client_auth(
    broker: ThreadBroker, cas: TwoAuthorities
) -> None:
    public = broker.broker.listener_port("SSL")
    internal = broker.broker.listener_port("INTERNAL")
    client = {
        "ssl.certificate.location": str(cas.internal_client.cert),
        "ssl.key.location": str(cas.internal_client.key),
    }
    # SSL: the broker-wide certificate, no client certificate asked for.
    assert topics(public, cas.public.cert) == []
    assert refused(public, cas.internal.cert)
    # INTERNAL: its own certificate, and a client certificate is required.
    assert topics(internal, cas.internal.cert, **client) == []
    assert refused(internal, cas.public.cert, **client)
    assert refused(internal, cas.internal.cert)


def test_a_key_naming_no_listener_is_refused(cas: TwoAuthorities) -> None:
    config = props(cas) | {"listener.name.intenral.ssl.client.auth": "required"}
    with pytest.raises(
        ConfigError, match=re.escape("listener.name.intenral.ssl.* names no listener")
    ):
        BrokerConfig(config)


def test_a_tls_listener_without_a_key_store_is_refused(cas: TwoAuthorities) -> None:
    config = props(cas)
    del config["ssl.keystore.location"]
    with pytest.raises(ConfigError, match=re.escape("TLS listener SSL has no key store")):
        BrokerConfig(config)


def test_a_listener_client_auth_without_a_trust_store_is_refused(cas: TwoAuthorities) -> None:
    config = props(cas) | {"listener.name.ssl.ssl.client.auth": "required"}
    with pytest.raises(
        ConfigError, match=re.escape("listener.name.ssl.ssl.client.auth of listener SSL")
    ):
        BrokerConfig(config)


def test_a_listener_scoped_value_is_checked_like_the_broker_wide_key(
    cas: TwoAuthorities,
) -> None:
    config = props(cas) | {"listener.name.internal.ssl.client.auth": "always"}
    with pytest.raises(ConfigError, match=re.escape("listener.name.internal.ssl.client.auth")):
        BrokerConfig(config)
