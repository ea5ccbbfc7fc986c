"""SASL_PLAINTEXT with kafka-python and aiokafka: PLAIN, SCRAM-SHA-256/512 and
OAUTHBEARER (unsecured tokens) produce, consume in a group and administer; a
wrong password is refused; kafka-python re-authenticates (KIP-368)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError as AioConnectionError
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import KafkaTimeoutError
from sasl_fixtures import client_settings, sasl_broker

from kgroups.testing.thread_broker import ThreadBroker

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
WITH_OAUTHBEARER = [*MECHANISMS, "OAUTHBEARER"]


@pytest.fixture(scope="module")
def sasl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadBroker]:
    b = sasl_broker(tmp_path_factory.mktemp("sasl") / "data").start()
    try:
        yield b
    finally:
        b.stop()


def _settings(
    sasl: ThreadBroker, client: str, mechanism: str, password: str | None = None
) -> dict[str, object]:
    return client_settings(client, sasl.bootstrap, "SASL_PLAINTEXT", mechanism, password=password)


@pytest.mark.parametrize("mechanism", WITH_OAUTHBEARER)
def test_kafka_python_produces_consumes_and_administers(sasl: ThreadBroker, mechanism: str) -> None:
    settings = _settings(sasl, "kafka-python", mechanism)
    topic = "kp-" + mechanism.lower()
    admin = KafkaAdminClient(**settings)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
        assert topic in admin.list_topics()
    finally:
        admin.close()
    producer = KafkaProducer(**settings)
    for i in range(3):
        producer.send(topic, f"m{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        group_id="g-" + topic,
        auto_offset_reset="earliest",
        consumer_timeout_ms=20000,
        **settings,
    )
    try:
        got = [m.value for _, m in zip(range(3), consumer, strict=False)]
        consumer.commit()
    finally:
        consumer.close()
    assert got == [b"m0", b"m1", b"m2"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_wrong_password_is_refused(
    sasl: ThreadBroker, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    # kafka-python drops an answer that arrives with the close, so it sees
    # a refused bootstrap rather than the authentication error.
    caplog.set_level(logging.INFO, logger="kgroups.network.sasl_authenticator")
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(
            bootstrap_timeout_ms=2000,
            **_settings(sasl, "kafka-python", mechanism, "wrong"),
        )
    assert "SASL authentication from 127.0.0.1 failed" in caplog.text


@pytest.mark.parametrize("mechanism", WITH_OAUTHBEARER)
def test_aiokafka_produces_and_consumes_in_a_group(sasl: ThreadBroker, mechanism: str) -> None:
    topic = "aio-" + mechanism.lower()

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**_settings(sasl, "aiokafka", mechanism))
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait(topic, f"m{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            group_id="g-" + topic,
            auto_offset_reset="earliest",
            **_settings(sasl, "aiokafka", mechanism),
        )
        await consumer.start()
        try:
            got = []
            while len(got) < 3:
                msg = await asyncio.wait_for(consumer.getone(), 30)
                got.append(msg.value)
            await consumer.commit()
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == [b"m0", b"m1", b"m2"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_wrong_password_is_refused(
    sasl: ThreadBroker, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def run() -> None:
        producer = AIOKafkaProducer(**_settings(sasl, "aiokafka", mechanism, "wrong"))
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(AioConnectionError, match="Unable to bootstrap"):
        asyncio.run(run())
    # aiokafka logs the broker's error before giving up the bootstrap.
    assert "[Error 58] SaslAuthenticationFailed" in caplog.text


def test_kafka_python_reauthenticates_before_its_session_expires(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kgroups")
    b = sasl_broker(tmp_path / "data", **{"connections.max.reauth.ms": "1000"}).start()
    try:
        producer = KafkaProducer(**_settings(b, "kafka-python", "SCRAM-SHA-256"))
        try:
            for _ in range(8):  # 2.4 s: two sessions end on the producer's connections
                producer.send("reauth", b"x").get(10)
                time.sleep(0.3)
        finally:
            producer.close()
        assert "session expired" not in caplog.text
    finally:
        b.stop()
