"""SASL_PLAINTEXT with confluent-kafka: every mechanism produces, consumes in a
group and administers; wrong passwords and mechanisms are refused."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from sasl_fixtures import confluent_config, sasl_broker

from kgroups.testing.thread_broker import ThreadBroker


@pytest.fixture(scope="module")
def sasl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadBroker]:
    b = sasl_broker(tmp_path_factory.mktemp("sasl") / "data").start()
    try:
        yield b
    finally:
        b.stop()


def _round_trip(bootstrap: str, config: dict[str, object], topic: str) -> list[bytes]:
    producer = Producer({**config, "bootstrap.servers": bootstrap})
    for i in range(3):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            **config,
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_each_mechanism_produces_and_consumes_in_a_group(
    sasl: ThreadBroker, mechanism: str
) -> None:
    config = confluent_config(sasl.bootstrap, mechanism)
    topic = "t-" + mechanism.lower()
    admin = AdminClient(config)
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    assert _round_trip(sasl.bootstrap, config, topic) == [b"m0", b"m1", b"m2"]


def _first_error(config: dict[str, object]) -> KafkaError:
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append})
    deadline = time.monotonic() + 30
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors, "the client saw no error"
    return errors[0]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_wrong_password_is_refused(sasl: ThreadBroker, mechanism: str) -> None:
    config = confluent_config(sasl.bootstrap, mechanism, password="wrong")
    error = _first_error(config)
    assert error.code() == KafkaError._AUTHENTICATION
    assert "Authentication failed" in error.str()


def test_a_mechanism_not_enabled_is_refused(tmp_path: Path) -> None:
    b = sasl_broker(tmp_path / "data", **{"sasl.enabled.mechanisms": "SCRAM-SHA-512"}).start()
    try:
        error = _first_error(confluent_config(b.bootstrap, "PLAIN"))
        assert error.code() == KafkaError._AUTHENTICATION
        assert "SCRAM-SHA-512" in error.str()  # the enabled list is given back
    finally:
        b.stop()


def test_admin_client_adds_a_scram_user_who_then_logs_in(sasl: ThreadBroker) -> None:
    admin = AdminClient(confluent_config(sasl.bootstrap, "SCRAM-SHA-512"))
    upsert = UserScramCredentialUpsertion(
        "dave", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"dave-secret"
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    described = admin.describe_user_scram_credentials(["dave"])["dave"].result(30)
    info = described.scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in info] == [(ScramMechanism.SCRAM_SHA_256, 8192)]
    dave = confluent_config(sasl.bootstrap, "SCRAM-SHA-256", "dave", "dave-secret")
    AdminClient(dave).list_topics(timeout=30)
    # Only the SCRAM-SHA-256 credential was made.
    with pytest.raises(KafkaException):
        other = confluent_config(sasl.bootstrap, "SCRAM-SHA-512", "dave", "dave-secret")
        AdminClient(other).list_topics(timeout=5)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_a_client_reauthenticates_before_its_session_expires(
    tmp_path: Path, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kgroups")
    b = sasl_broker(tmp_path / "data", **{"connections.max.reauth.ms": "1000"}).start()
    try:
        errors: list[KafkaError] = []
        config = {**confluent_config(b.bootstrap, mechanism), "error_cb": errors.append}
        producer = Producer(config)
        delivered: list[object] = []
        for i in range(12):
            producer.produce(
                "reauth", f"m{i}".encode(), on_delivery=lambda e, m: delivered.append(e)
            )
            producer.flush(10)
            time.sleep(0.3)
        assert delivered == [None] * 12
        assert errors == []
        assert "session expired" not in caplog.text
    finally:
        b.stop()


def test_managing_credentials_needs_cluster_alter_and_describe(tmp_path: Path) -> None:
    b = sasl_broker(
        tmp_path / "data",
        **{
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:alice",
        },
    ).start()
    try:
        upsert = UserScramCredentialUpsertion(
            "hank", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"hank-secret"
        )
        bob = AdminClient(confluent_config(b.bootstrap, "SCRAM-SHA-256"))
        with pytest.raises(KafkaException) as denied:
            bob.alter_user_scram_credentials([upsert])["hank"].result(30)
        assert denied.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        with pytest.raises(KafkaException) as denied:
            bob.describe_user_scram_credentials(["hank"])["hank"].result(30)
        assert denied.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        alice = AdminClient(confluent_config(b.bootstrap, "PLAIN"))
        alice.alter_user_scram_credentials([upsert])["hank"].result(30)
        hank = confluent_config(b.bootstrap, "SCRAM-SHA-256", "hank", "hank-secret")
        assert AdminClient(hank).list_topics(timeout=30).brokers
    finally:
        b.stop()


def test_a_produce_bigger_than_one_read_after_authentication(sasl: ThreadBroker) -> None:
    """A request read into a buffer of its own (past 64 KiB) still passes the
    SASL session's checks and is written whole."""
    config = confluent_config(sasl.bootstrap, "PLAIN")
    topic = "t-big-sasl"
    admin = AdminClient(config)
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    producer = Producer({**config, "linger.ms": 200, "batch.size": 1_000_000})
    values = [bytes([i % 251]) * 1000 for i in range(300)]
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": "g-big-sasl", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < len(values) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    assert got == values
