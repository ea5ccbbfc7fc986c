"""Kafka's security model with confluent-kafka, kafka-python and aiokafka on
one broker with SSL, SASL_PLAINTEXT and SASL_SSL listeners.

Each client creates a topic with its admin client, produces and consumes in a
group over SASL_SSL with PLAIN and SCRAM-SHA-256/512, and administers over SSL
and SASL_PLAINTEXT; a wrong password, a mechanism the broker has not enabled,
a server certificate the client does not trust and a client certificate the
broker does not trust are each refused with the client's own error. The same
round trip over SSL and SASL_PLAINTEXT is in test_tls_listeners.py and
tests/integration/test_sasl_*.py.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from sasl_fixtures import CLIENTS, JAAS, client_settings, sasl_broker

from kgroups.testing.thread_broker import ThreadBroker

from certificates import Authority, Issued, broker_tls_settings

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# Served by kgroups and by every client, but not enabled on this broker.
NOT_ENABLED = "OAUTHBEARER"


@dataclass(frozen=True)
class Secured:
    broker: ThreadBroker
    ca: Path
    stranger_ca: Path
    """A CA that did not sign the broker's certificate."""
    stranger: Issued
    """A client certificate from that CA."""

    def bootstrap(self, listener: str) -> str:
        assert self.broker.broker is not None
        return f"127.0.0.1:{self.broker.broker.listener_port(listener)}"

    def settings(
        self, client: str, listener: str, mechanism: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        ca = self.ca if "SSL" in listener else None
        return client_settings(
            client, self.bootstrap(listener), listener, mechanism, **{"ca": ca, **extra}
        )


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("security")
    ca = Authority(root / "ca")
    stranger = Authority(root / "other", "Other CA")
    broker = sasl_broker(
        root / "data",
        **{
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0",
            "sasl.enabled.mechanisms": ",".join(MECHANISMS),
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            **broker_tls_settings(ca.server(), ca.cert),
            # A client may present a certificate; an untrusted one is refused.
            "ssl.client.auth": "requested",
        },
    ).start()
    try:
        yield Secured(broker, ca.cert, stranger.cert, stranger.client(cn="mallory"))
    finally:
        broker.stop()


def _topic(*parts: str) -> str:
    return "-".join(p.lower() for p in parts)


# The round trip of each client: its admin client creates the topic, then two
# records are produced and read back by a consumer in a group that commits.


def _confluent_round_trip(config: dict[str, Any], topic: str) -> list[bytes]:
    admin = AdminClient(config)
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    producer = Producer(config)
    for value in (b"a", b"b"):
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < 2 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


def _kafka_python_round_trip(settings: dict[str, Any], topic: str) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer

    _kafka_python_admin(settings, topic)
    producer = KafkaProducer(**settings)
    for value in (b"a", b"b"):
        producer.send(topic, value)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        topic, group_id=topic, auto_offset_reset="earliest", consumer_timeout_ms=30000, **settings
    )
    try:
        got = [m.value for _, m in zip(range(2), consumer, strict=False)]
        consumer.commit()
    finally:
        consumer.close()
    return got


def _kafka_python_admin(settings: dict[str, Any], topic: str) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic as KpNewTopic

    admin = KafkaAdminClient(**settings)
    try:
        admin.create_topics([KpNewTopic(topic, 1, 1)])
        assert topic in admin.list_topics()
    finally:
        admin.close()


async def _aiokafka_admin(settings: dict[str, Any], topic: str) -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin import NewTopic as AioNewTopic

    admin = AIOKafkaAdminClient(**settings)
    await admin.start()
    try:
        await admin.create_topics([AioNewTopic(topic, 1, 1)])
        assert topic in await admin.list_topics()
    finally:
        await admin.close()


async def _aiokafka_round_trip(settings: dict[str, Any], topic: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    await _aiokafka_admin(settings, topic)
    producer = AIOKafkaProducer(**settings)
    await producer.start()
    try:
        for value in (b"a", b"b"):
            await producer.send_and_wait(topic, value)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, group_id=topic, auto_offset_reset="earliest", **settings)
    await consumer.start()
    try:
        got = [(await asyncio.wait_for(consumer.getone(), 30)).value for _ in range(2)]
        await consumer.commit()
        return got
    finally:
        await consumer.stop()


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("client", CLIENTS)
def test_each_client_administers_produces_and_consumes_in_a_group_over_sasl_ssl(
    secured: Secured, client: str, mechanism: str
) -> None:
    settings = secured.settings(client, "SASL_SSL", mechanism)
    topic = _topic("sasl-ssl", client, mechanism)
    if client == "confluent-kafka":
        got = _confluent_round_trip(settings, topic)
    elif client == "kafka-python":
        got = _kafka_python_round_trip(settings, topic)
    else:
        got = asyncio.run(_aiokafka_round_trip(settings, topic))
    assert got == [b"a", b"b"]


@pytest.mark.parametrize(
    ("client", "listener", "mechanism"),
    [
        ("kafka-python", "SSL", None),
        ("aiokafka", "SSL", None),
        ("aiokafka", "SASL_PLAINTEXT", "SCRAM-SHA-512"),
    ],
    ids=["kafka-python-SSL", "aiokafka-SSL", "aiokafka-SASL_PLAINTEXT"],
)
def test_the_python_admin_clients_create_and_list_topics(
    secured: Secured, client: str, listener: str, mechanism: str | None
) -> None:
    settings = secured.settings(client, listener, mechanism)
    topic = _topic("admin", client, listener)
    if client == "kafka-python":
        _kafka_python_admin(settings, topic)
    else:
        asyncio.run(_aiokafka_admin(settings, topic))


# Refusals. confluent-kafka reports the first error through error_cb;
# kafka-python and aiokafka fail to bootstrap. kafka-python often misses the
# broker's answer, which arrives together with the close of the connection (as
# from Kafka), so its SASL refusals are checked in the broker's log.


def _confluent_first_error(config: dict[str, Any]) -> KafkaError:
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append})
    deadline = time.monotonic() + 30
    while not errors and time.monotonic() < deadline:
        producer.poll(0.1)
    assert errors, "the client saw no error"
    return errors[0]


def _kafka_python_bootstrap_fails(settings: dict[str, Any]) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(bootstrap_timeout_ms=2000, **settings)


def _aiokafka_bootstrap_fails(settings: dict[str, Any]) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError

    async def start() -> None:
        producer = AIOKafkaProducer(**settings)
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(KafkaConnectionError, match="Unable to bootstrap"):
        asyncio.run(start())


@pytest.mark.parametrize("client", CLIENTS)
def test_a_wrong_password_is_refused_over_sasl_ssl(
    secured: Secured, client: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    settings = secured.settings(client, "SASL_SSL", "SCRAM-SHA-256", password="wrong")
    if client == "confluent-kafka":
        error = _confluent_first_error(settings)
        assert error.code() == KafkaError._AUTHENTICATION
        assert "Authentication failed" in error.str()
        return
    if client == "kafka-python":
        _kafka_python_bootstrap_fails(settings)
        assert "SASL authentication from 127.0.0.1 failed" in caplog.text
    else:
        _aiokafka_bootstrap_fails(settings)
        assert "[Error 58] SaslAuthenticationFailed" in caplog.text


@pytest.mark.parametrize("client", CLIENTS)
def test_a_mechanism_not_enabled_is_refused(
    secured: Secured, client: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    settings = secured.settings(client, "SASL_PLAINTEXT", NOT_ENABLED)
    if client == "confluent-kafka":
        error = _confluent_first_error(settings)
        assert error.code() == KafkaError._AUTHENTICATION
        assert "SCRAM-SHA-512" in error.str()  # the enabled list is given back
        return
    if client == "kafka-python":
        _kafka_python_bootstrap_fails(settings)
        assert "failed: mechanism OAUTHBEARER is not enabled" in caplog.text
    else:
        _aiokafka_bootstrap_fails(settings)
        assert "UnsupportedSaslMechanism" in caplog.text


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
@pytest.mark.parametrize("client", CLIENTS)
def test_a_server_certificate_the_client_does_not_trust_is_refused(
    secured: Secured, client: str, listener: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    mechanism = "PLAIN" if listener == "SASL_SSL" else None
    settings = secured.settings(client, listener, mechanism, ca=secured.stranger_ca)
    if client == "confluent-kafka":
        error = _confluent_first_error(settings)
        # librdkafka names _SSL or _TRANSPORT, depending on the step it was at.
        assert error.code() in (KafkaError._SSL, KafkaError._TRANSPORT)
        assert "certificate verify failed" in error.str()
        return
    if client == "kafka-python":
        _kafka_python_bootstrap_fails(settings)
    else:
        _aiokafka_bootstrap_fails(settings)
    assert "CERTIFICATE_VERIFY_FAILED" in caplog.text


@pytest.mark.parametrize("client", CLIENTS)
def test_a_client_certificate_the_broker_does_not_trust_is_refused(
    secured: Secured, client: str
) -> None:
    settings = secured.settings(client, "SSL", certificate=secured.stranger)
    if client == "confluent-kafka":
        # librdkafka names the TLS alert (see below) with _TRANSPORT, and may
        # then report that no broker is up.
        error = _confluent_first_error(settings)
        assert error.code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
    elif client == "kafka-python":
        _kafka_python_bootstrap_fails(settings)
    else:
        _aiokafka_bootstrap_fails(settings)


def test_the_refusal_of_a_client_certificate_names_the_tls_alert(secured: Secured) -> None:
    # The broker sends the alert OpenSSL wrote, as Kafka does (asyncio alone drops it).
    settings = secured.settings("confluent-kafka", "SSL", certificate=secured.stranger)
    assert "alert unknown ca" in _confluent_first_error(settings).str()
