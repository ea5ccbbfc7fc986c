"""ACLs for the principal a client certificate names: the same producer is
allowed over SSL as its certificate's subject and refused over PLAINTEXT as
User:ANONYMOUS."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import KafkaError, Producer

from kgroups.security.authorizer import AclBinding, Operation, PatternType, Permission, ResourceType

from broker_thread import BrokerThread
from certificates import Authority

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ALICE = "User:CN=alice,OU=eng,O=Example"


def _produce(config: dict[str, object]) -> list[int]:
    errors: list[int] = []

    def delivered(err: KafkaError | None, _msg: object) -> None:
        errors.append(0 if err is None else err.code())

    producer = Producer({**config, "message.timeout.ms": 10000, "enable.idempotence": False})
    producer.produce("orders", b"v", on_delivery=delivered)
    producer.flush(30)
    return errors


def test_a_certificate_principal_is_authorized_and_anonymous_is_not(tmp_path: Path) -> None:
    ca = Authority(tmp_path / "ca")
    server, client = ca.server(), ca.client(cn="alice", ou="eng")
    broker = BrokerThread(
        tmp_path / "data",
        listeners="PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        ssl_keystore_type="PEM",
        ssl_keystore_location=str(server.both),
        ssl_truststore_type="PEM",
        ssl_truststore_location=str(ca.cert),
        ssl_client_auth="required",
        authorizer_class_name=STANDARD,
        allow_everyone_if_no_acl_found="false",
    ).start()
    try:
        assert broker.broker is not None and broker.broker.authorizer is not None
        grants = [
            AclBinding(
                ResourceType.TOPIC, "orders", PatternType.LITERAL, ALICE, "*", op, Permission.ALLOW
            )
            for op in (Operation.WRITE, Operation.CREATE)
        ]
        broker.call(lambda: broker.broker.authorizer.create(grants))  # type: ignore[union-attr]
        ssl_config: dict[str, object] = {
            "bootstrap.servers": f"127.0.0.1:{broker.broker.listener_port('SSL')}",
            "security.protocol": "SSL",
            "ssl.ca.location": str(ca.cert),
            "ssl.certificate.location": str(client.cert),
            "ssl.key.location": str(client.key),
        }
        assert _produce(ssl_config) == [0]
        plain = {"bootstrap.servers": f"127.0.0.1:{broker.broker.listener_port('PLAINTEXT')}"}
        assert _produce(plain) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    finally:
        broker.stop()
