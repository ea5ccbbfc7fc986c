"""ssl.principal.mapping.rules with RULE: entries: the principal an ACL names is
the one the rules make of a client certificate's subject, and a certificate no
rule applies to is refused."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer

from kgroups.config.broker_config import BrokerConfig, ConfigError
from kgroups.security.authorizer import AclBinding, Operation, PatternType, Permission, ResourceType
from kgroups.server.broker import Broker

from broker_thread import BrokerThread
from certificates import Authority, Issued

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# Staff certificates are named by their common name, lower-cased; nobody else is.
RULES = "RULE:^CN=([^,]+),OU=staff,O=Example$/$1/L"


def _produce(port: int, ca: Authority, client: Issued) -> list[int]:
    errors: list[int] = []

    def delivered(err: KafkaError | None, _msg: object) -> None:
        errors.append(0 if err is None else err.code())

    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "SSL",
            "ssl.ca.location": str(ca.cert),
            "ssl.certificate.location": str(client.cert),
            "ssl.key.location": str(client.key),
            "message.timeout.ms": 3000,
            "enable.idempotence": False,
        }
    )
    producer.produce("orders", b"v", on_delivery=delivered)
    producer.flush(30)
    return errors


def test_an_acl_on_the_mapped_principal_applies(tmp_path: Path) -> None:
    ca = Authority(tmp_path / "ca")
    server = ca.server()
    alice = ca.client(cn="Alice", ou="staff", file_name="alice")
    guest = ca.client(cn="Guest", ou="visitors", file_name="guest")
    broker = BrokerThread(
        tmp_path / "data",
        listeners="SSL://127.0.0.1:0",
        ssl_keystore_type="PEM",
        ssl_keystore_location=str(server.both),
        ssl_truststore_type="PEM",
        ssl_truststore_location=str(ca.cert),
        ssl_client_auth="required",
        ssl_principal_mapping_rules=RULES,
        authorizer_class_name=STANDARD,
        allow_everyone_if_no_acl_found="false",
    ).start()
    try:
        assert broker.broker is not None and broker.broker.authorizer is not None
        grants = [
            AclBinding(
                ResourceType.TOPIC,
                "orders",
                PatternType.LITERAL,
                "User:alice",
                "*",
                op,
                Permission.ALLOW,
            )
            for op in (Operation.WRITE, Operation.CREATE)
        ]
        broker.call(lambda: broker.broker.authorizer.create(grants))  # type: ignore[union-attr]
        port = broker.broker.listener_port("SSL")
        assert _produce(port, ca, alice) == [0]
        # No rule names a visitor: the connection is closed after the handshake.
        assert _produce(port, ca, guest) == [KafkaError._MSG_TIMED_OUT]
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            context = ssl.create_default_context(cafile=str(ca.cert))
            context.load_cert_chain(str(guest.cert), str(guest.key))
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                assert tls.recv(4) == b""  # closed by the broker, not left open
    finally:
        broker.stop()


def test_rules_that_do_not_parse_stop_the_broker(tmp_path: Path) -> None:
    ca = Authority(tmp_path / "ca")
    config = BrokerConfig(
        {
            "listeners": "SSL://127.0.0.1:0",
            "log.dirs": str(tmp_path / "data"),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(ca.server().both),
            "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=(.*)$/$1/X",
        }
    )
    with pytest.raises(ConfigError, match=r"listener\.name\.ssl\.ssl\.principal\.mapping\.rules"):
        Broker(config)
