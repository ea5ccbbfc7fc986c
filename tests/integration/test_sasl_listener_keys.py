"""Kafka's per-listener SASL keys: listener.name.<listener>.<mechanism>.sasl.jaas.config
gives a listener its own PLAIN users, listener.name.<listener>.sasl.enabled.mechanisms
its own mechanisms, for named listeners as for SASL_PLAINTEXT and SASL_SSL."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2 import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1 import SaslHandshakeRequest
from sasl_fixtures import PASSWORDS, add_scram_user, confluent_config

from kgroups.config.broker_config import BrokerConfig, ConfigError
from kgroups.testing.thread_broker import ThreadBroker

from raw_wire import call

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule required"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
SETTINGS = {
    "listeners": "CLIENTS://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": (
        "CLIENTS:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT"
    ),
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "listener.name.clients.plain.sasl.jaas.config": f'{PLAIN_MODULE} user_carol="carol-secret";',
    # PLAIN is not enabled on SASL_PLAINTEXT: alice is nobody anywhere.
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
        f'{PLAIN_MODULE} user_alice="{PASSWORDS["alice"]}";'
    ),
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-256",
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_MODULE,
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadBroker]:
    data = tmp_path_factory.mktemp("listener-sasl") / "data"
    data.mkdir()
    add_scram_user(data, "bob", PASSWORDS["bob"])
    b = ThreadBroker(data, SETTINGS).start()
    try:
        yield b
    finally:
        b.stop()


def _bootstrap(b: ThreadBroker, listener: str) -> str:
    return f"127.0.0.1:{b.broker.listener_port(listener)}"


def _handshake(b: ThreadBroker, listener: str, mechanism: str) -> tuple[socket.socket, object]:
    s = socket.create_connection(("127.0.0.1", b.broker.listener_port(listener)), timeout=30)
    response, _ = call(s, SaslHandshakeRequest(mechanism=mechanism))
    return s, response


def test_a_named_listener_logs_in_its_own_plain_users(broker: ThreadBroker) -> None:
    config = confluent_config(_bootstrap(broker, "CLIENTS"), "PLAIN", "carol", "carol-secret")
    admin = AdminClient(config)
    admin.create_topics([NewTopic("carols", 1)])["carols"].result(30)
    assert "carols" in admin.list_topics(timeout=30).topics


def test_a_listener_knows_only_the_plain_users_of_its_own_key(broker: ThreadBroker) -> None:
    s, handshake = _handshake(broker, "CLIENTS", "PLAIN")
    with s:
        assert handshake.error_code == ErrorCode.none  # type: ignore[attr-defined]
        token = f"\0alice\0{PASSWORDS['alice']}".encode()
        response, _ = call(s, SaslAuthenticateRequest(auth_bytes=token))
        assert response.error_code == ErrorCode.sasl_authentication_failed


def test_a_listener_offers_only_its_own_mechanisms(broker: ThreadBroker) -> None:
    s, handshake = _handshake(broker, "SASL_PLAINTEXT", "PLAIN")
    with s:
        assert handshake.error_code == ErrorCode.unsupported_sasl_mechanism  # type: ignore[attr-defined]
        assert list(handshake.mechanisms) == ["SCRAM-SHA-256"]  # type: ignore[attr-defined]
    s, handshake = _handshake(broker, "CLIENTS", "SCRAM-SHA-512")
    with s:
        assert list(handshake.mechanisms) == ["PLAIN", "SCRAM-SHA-256"]  # type: ignore[attr-defined]


def test_a_listener_without_sasl_offers_no_mechanism(broker: ThreadBroker) -> None:
    s, handshake = _handshake(broker, "PLAINTEXT", "PLAIN")
    with s:
        assert handshake.error_code == ErrorCode.illegal_sasl_state  # type: ignore[attr-defined]
        assert list(handshake.mechanisms) == []  # type: ignore[attr-defined]


def test_scram_still_logs_in_where_only_scram_is_enabled(broker: ThreadBroker) -> None:
    config = confluent_config(_bootstrap(broker, "SASL_PLAINTEXT"), "SCRAM-SHA-256")
    AdminClient(config).list_topics(timeout=30)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (
            "listener.name.nosuch.plain.sasl.jaas.config",
            "listener.name.nosuch.plain.sasl.jaas.config names no listener",
        ),
        (
            "listener.name.nosuch.sasl.enabled.mechanisms",
            "listener.name.nosuch.sasl.enabled.mechanisms names no listener",
        ),
        (
            "listener.name.plaintext.plain.sasl.jaas.config",
            "listener PLAINTEXT does not use SASL",
        ),
        (
            "listener.name.clients.kerberos.sasl.jaas.config",
            "unknown SASL mechanism 'KERBEROS'",
        ),
    ],
)
def test_a_key_for_no_sasl_listener_stops_the_broker(
    tmp_path: Path, key: str, message: str
) -> None:
    props = SETTINGS | {
        "log.dirs": str(tmp_path),
        key: "SCRAM-SHA-256" if key.endswith("mechanisms") else SCRAM_MODULE,
    }
    with pytest.raises(ConfigError, match=re.escape(message)):
        BrokerConfig(props)


def test_a_listener_mechanism_list_is_checked_like_the_broker_wide_one() -> None:
    props = SETTINGS | {"listener.name.clients.sasl.enabled.mechanisms": "PLAIN,KERBEROS"}
    with pytest.raises(
        ConfigError, match=re.escape("listener.name.clients.sasl.enabled.mechanisms")
    ):
        BrokerConfig(props)
