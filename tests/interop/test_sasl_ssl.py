"""SASL_SSL: SCRAM and PLAIN over TLS with confluent-kafka, beside a
SASL_PLAINTEXT listener on the same broker."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient
from sasl_fixtures import confluent_config, sasl_broker

from certificates import Authority


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_sasl_ssl_authenticates_and_refuses_over_tls(tmp_path: Path, mechanism: str) -> None:
    ca = Authority(tmp_path / "ca")
    server = ca.server()
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'user_alice="alice-secret";'
    )
    b = sasl_broker(
        tmp_path / "data",
        **{
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(server.both),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(ca.cert),
        },
    ).start()
    try:
        assert b.broker is not None
        bootstrap = f"127.0.0.1:{b.broker.listener_port('SASL_SSL')}"
        config = {
            **confluent_config(bootstrap, mechanism),
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(ca.cert),
        }
        metadata = AdminClient(config).list_topics(timeout=30)
        assert [broker.port for broker in metadata.brokers.values()] == [
            b.broker.listener_port("SASL_SSL")
        ]
        errors: list[KafkaError] = []
        wrong = {**config, "sasl.password": "wrong", "error_cb": errors.append}
        producer = Producer(wrong)
        for _ in range(100):
            if errors:
                break
            producer.poll(0.2)
        assert errors and errors[0].code() == KafkaError._AUTHENTICATION
    finally:
        b.stop()
