"""SSL listeners beside PLAINTEXT, as Kafka's clients use them."""

from __future__ import annotations

import asyncio
import socket
import ssl
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kgroups.server.broker as broker_module

from broker_thread import BrokerThread
from certificates import Authority, Issued

TLS_ALERT = 0x15  # the record type of a TLS alert


class Pki:
    def __init__(self, directory: Path) -> None:
        self.ca = Authority(directory / "ca")
        self.server = self.ca.server()
        self.client = self.ca.client(cn="alice", ou="eng")


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki(tmp_path / "pki")


def start(tmp_path: Path, pki: Pki, client_auth: str = "none") -> BrokerThread:
    broker = BrokerThread(
        tmp_path / "data",
        listeners="PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        ssl_keystore_type="PEM",
        ssl_keystore_location=str(pki.server.both),
        ssl_truststore_type="PEM",
        ssl_truststore_location=str(pki.ca.cert),
        ssl_client_auth=client_auth,
    )
    return broker.start()


@pytest.fixture
def tls_broker(tmp_path: Path, pki: Pki) -> Iterator[BrokerThread]:
    broker = start(tmp_path, pki)
    yield broker
    broker.stop()


def ssl_port(broker: BrokerThread) -> int:
    return broker.broker.listener_port("SSL")


def confluent_ssl(
    broker: BrokerThread, ca: Path, client: Issued | None = None, **extra: object
) -> dict[str, object]:
    config: dict[str, object] = {
        "bootstrap.servers": f"127.0.0.1:{ssl_port(broker)}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(ca),
        **extra,
    }
    if client is not None:
        config["ssl.certificate.location"] = str(client.cert)
        config["ssl.key.location"] = str(client.key)
    return config


def test_confluent_kafka_creates_produces_and_consumes_in_a_group_over_ssl(
    tls_broker: BrokerThread, pki: Pki
) -> None:
    admin = AdminClient(confluent_ssl(tls_broker, pki.ca.cert))
    admin.create_topics([NewTopic("secured", 2)])["secured"].result(timeout=20)
    producer = Producer(confluent_ssl(tls_broker, pki.ca.cert))
    for i in range(10):
        producer.produce("secured", f"v{i}".encode(), partition=i % 2)
    assert producer.flush(20) == 0
    consumer = Consumer(
        confluent_ssl(tls_broker, pki.ca.cert, **{"group.id": "g", "auto.offset.reset": "earliest"})
    )
    consumer.subscribe(["secured"])
    values: set[bytes] = set()
    for _ in range(100):
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.add(message.value())
            if len(values) == 10:
                break
    consumer.commit(asynchronous=False)
    consumer.close()
    assert values == {f"v{i}".encode() for i in range(10)}


def test_kafka_python_produces_and_consumes_in_a_group_over_ssl(
    tls_broker: BrokerThread, pki: Pki
) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    tls = {
        "bootstrap_servers": f"127.0.0.1:{ssl_port(tls_broker)}",
        "security_protocol": "SSL",
        "ssl_cafile": str(pki.ca.cert),
    }
    producer = KafkaProducer(**tls)
    producer.send("kp", b"hello").get(timeout=20)
    producer.close()
    consumer = KafkaConsumer(
        "kp", group_id="kpg", auto_offset_reset="earliest", consumer_timeout_ms=15000, **tls
    )
    assert next(iter(consumer)).value == b"hello"
    consumer.close()


def test_aiokafka_produces_and_consumes_in_a_group_over_ssl(
    tls_broker: BrokerThread, pki: Pki
) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context

    async def run() -> bytes | None:
        tls = {
            "bootstrap_servers": f"127.0.0.1:{ssl_port(tls_broker)}",
            "security_protocol": "SSL",
            "ssl_context": create_ssl_context(cafile=str(pki.ca.cert)),
        }
        producer = AIOKafkaProducer(**tls)
        await producer.start()
        await producer.send_and_wait("ak", b"hello")
        await producer.stop()
        consumer = AIOKafkaConsumer("ak", group_id="akg", auto_offset_reset="earliest", **tls)
        await consumer.start()
        try:
            message = await asyncio.wait_for(consumer.getone(), 20)
            return message.value
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == b"hello"


def test_each_listener_answers_metadata_with_its_own_address(
    tls_broker: BrokerThread, pki: Pki
) -> None:
    plain = AdminClient({"bootstrap.servers": tls_broker.bootstrap})
    secure = AdminClient(confluent_ssl(tls_broker, pki.ca.cert))
    for admin, port in ((plain, tls_broker.port), (secure, ssl_port(tls_broker))):
        brokers = admin.list_topics(timeout=10).brokers
        assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", port)]
    assert tls_broker.port != ssl_port(tls_broker)


def test_required_client_auth_refuses_a_client_without_a_certificate(
    tmp_path: Path, pki: Pki
) -> None:
    broker = start(tmp_path, pki, client_auth="required")
    try:
        anonymous = AdminClient(confluent_ssl(broker, pki.ca.cert))
        with pytest.raises(KafkaException):
            anonymous.list_topics(timeout=5)
        known = AdminClient(confluent_ssl(broker, pki.ca.cert, pki.client))
        assert known.list_topics(timeout=10).brokers
    finally:
        broker.stop()


def test_garbage_plaintext_and_silence_on_the_ssl_port_leave_the_broker_serving(
    tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(broker_module, "SSL_HANDSHAKE_TIMEOUT_S", 0.5)
    broker = start(tmp_path, pki)
    try:
        port = ssl_port(broker)
        silent = socket.create_connection(("127.0.0.1", port))
        silent.settimeout(20)
        for junk in (uuid.uuid4().bytes * 64, b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x01\x00\x00"):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(junk)
                try:
                    reply = s.recv(1024)
                except ConnectionResetError:
                    reply = b""
                assert reply == b"" or reply[0] == TLS_ALERT  # never a Kafka answer
        assert silent.recv(1) == b""  # a stalled handshake is closed
        silent.close()
        admin = AdminClient(confluent_ssl(broker, pki.ca.cert))
        assert admin.list_topics(timeout=10).brokers
    finally:
        broker.stop()


def test_a_client_certificate_names_the_principal(pki: Pki) -> None:
    from kgroups.config.broker_config import BrokerConfig
    from kgroups.network.tls import peer_subject, server_context

    config = BrokerConfig(
        {
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.server.both),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca.cert),
            "ssl.client.auth": "requested",
        }
    )

    async def subjects() -> list[str | None]:
        seen: list[str | None] = []

        async def on_connection(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            seen.append(peer_subject(w.get_extra_info("ssl_object")))
            w.close()

        server = await asyncio.start_server(
            on_connection, "127.0.0.1", 0, ssl=server_context(config, "SSL")
        )
        port = server.sockets[0].getsockname()[1]
        for client in (pki.client, None):
            context = ssl.create_default_context(cafile=str(pki.ca.cert))
            if client is not None:
                context.load_cert_chain(client.cert, client.key)
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
            await reader.read()
            writer.close()
        server.close()
        return seen

    assert asyncio.run(subjects()) == ["CN=alice,OU=eng,O=Example", None]


def test_named_listeners_advertise_their_own_addresses(tmp_path: Path) -> None:
    broker = BrokerThread(
        tmp_path,
        listeners="INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
        listener_security_protocol_map="INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        advertised_listeners="EXTERNAL://localhost:0",
        inter_broker_listener_name="INTERNAL",
    ).start()
    try:
        for name, host in (("INTERNAL", "127.0.0.1"), ("EXTERNAL", "localhost")):
            port = broker.broker.listener_port(name)
            admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
            brokers = admin.list_topics(timeout=10).brokers
            assert [(b.host, b.port) for b in brokers.values()] == [(host, port)]
    finally:
        broker.stop()
