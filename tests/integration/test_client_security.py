"""kgroups' own client over TLS and SASL: a group consumes what a producer sent
over SASL_SSL (SCRAM-SHA-512) and over SSL with a client certificate; a wrong
password is refused at once with a typed error."""

from __future__ import annotations

import asyncio
import ssl
import time
from pathlib import Path

import pytest
from sasl_fixtures import PASSWORDS, sasl_broker
from tls_listener import handshaking_listener

from kgroups.client.async_consumer import AsyncConsumer
from kgroups.client.cluster import ClusterClient
from kgroups.client.consumer import Consumer
from kgroups.client.exceptions import AuthenticationFailedError, SslAuthenticationError
from kgroups.client.producer import Producer
from kgroups.client.security import ClientSecurity
from kgroups.errors import ErrorCode
from kgroups.testing.thread_broker import ThreadBroker

from broker_thread import BrokerThread
from certificates import Authority

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def jaas(module: str, user: str, password: str) -> str:
    return f'{module} required username="{user}" password="{password}";'


def _round_trip(config: dict[str, object], topic: str) -> list[bytes]:
    """Produce three records, then read them back as a group member, committing."""
    with Producer(config) as producer:
        for i in range(3):
            producer.send(topic, f"m{i}".encode()).result(30)
    consumer = Consumer({**config, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            got += [r.value or b"" for r in consumer.poll(1.0)]
        consumer.commit()
        assert consumer.committed([(topic, 0)])
    finally:
        consumer.close()
    return got


@pytest.fixture
def sasl_ssl(tmp_path: Path) -> tuple[ThreadBroker, dict[str, object]]:
    ca = Authority(tmp_path / "ca")
    server = ca.server()
    b = sasl_broker(
        tmp_path / "data",
        **{
            "listeners": "SASL_SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(server.both),
            "ssl.truststore.type": "PEM",
        },
    ).start()
    assert b.broker is not None
    config: dict[str, object] = {
        "bootstrap.servers": f"127.0.0.1:{b.broker.listener_port('SASL_SSL')}",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": jaas(SCRAM, "bob", PASSWORDS["bob"]),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.cert),
    }
    return b, config


def test_a_group_consumes_over_sasl_ssl_with_scram_sha_512(
    sasl_ssl: tuple[ThreadBroker, dict[str, object]],
) -> None:
    broker, config = sasl_ssl
    try:
        assert _round_trip(config, "scram-orders") == [b"m0", b"m1", b"m2"]
    finally:
        broker.stop()


def test_a_wrong_password_raises_the_brokers_refusal_at_once(
    sasl_ssl: tuple[ThreadBroker, dict[str, object]],
) -> None:
    broker, config = sasl_ssl
    wrong = {**config, "sasl.jaas.config": jaas(SCRAM, "bob", "not-bobs")}
    try:
        started = time.monotonic()
        consumer = Consumer({**wrong, "group.id": "g"})
        try:
            consumer.subscribe(["orders"])
            with pytest.raises(AuthenticationFailedError) as refused:
                consumer.poll(20)
        finally:
            consumer.close()
        assert refused.value.error_code == ErrorCode.sasl_authentication_failed
        assert "invalid credentials" in str(refused.value)
        producer = Producer({**wrong, "max.block.ms": 20000})
        with producer, pytest.raises(AuthenticationFailedError):
            producer.send("orders", b"v")
        assert time.monotonic() - started < 10
    finally:
        broker.stop()


def test_the_asyncio_consumer_reads_over_sasl_plaintext_with_plain(tmp_path: Path) -> None:
    b = sasl_broker(tmp_path / "data").start()
    config: dict[str, object] = {
        "bootstrap.servers": b.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": jaas(PLAIN, "alice", PASSWORDS["alice"]),
    }
    try:
        with Producer(config) as producer:
            producer.send("plain-orders", b"hello").result(30)

        async def consume() -> list[bytes]:
            consumer = AsyncConsumer({**config, "auto.offset.reset": "earliest"})
            try:
                consumer.assign([("plain-orders", 0)])
                records = await consumer.poll(20)
                return [r.value or b"" for r in records]
            finally:
                await consumer.close()

        assert asyncio.run(consume()) == [b"hello"]
    finally:
        b.stop()


def test_a_group_consumes_over_ssl_with_a_client_certificate(tmp_path: Path) -> None:
    ca = Authority(tmp_path / "ca")
    server, client = ca.server(), ca.client(cn="alice")
    broker = BrokerThread(
        tmp_path / "data",
        listeners="SSL://127.0.0.1:0",
        ssl_keystore_type="PEM",
        ssl_keystore_location=str(server.both),
        ssl_truststore_type="PEM",
        ssl_truststore_location=str(ca.cert),
        ssl_client_auth="required",
    ).start()
    assert broker.broker is not None
    config: dict[str, object] = {
        "bootstrap.servers": f"127.0.0.1:{broker.broker.listener_port('SSL')}",
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.cert),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(client.both),
    }
    try:
        assert _round_trip(config, "tls-orders") == [b"m0", b"m1", b"m2"]
        # A broker whose certificate the trust store does not vouch for is refused.
        stranger = Authority(tmp_path / "other", name="Other CA")
        untrusting = {**config, "ssl.truststore.location": str(stranger.cert)}
        consumer = Consumer({**untrusting, "default.api.timeout.ms": 3000})
        try:
            with pytest.raises(SslAuthenticationError, match="certificate"):
                consumer.end_offsets([("tls-orders", 0)])
        finally:
            consumer.close()
    finally:
        broker.stop()


def _tls_broker(tmp_path: Path, ca: Authority, **ssl: str) -> tuple[ThreadBroker, str]:
    server = ca.server()
    broker = ThreadBroker(
        tmp_path / "data",
        {
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": server.key.read_text(),
            "ssl.keystore.certificate.chain": server.cert.read_text(),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(ca.cert),
            "ssl.client.auth": "required",
            **ssl,
        },
    ).start()
    assert broker.broker is not None
    return broker, f"127.0.0.1:{broker.broker.listener_port('SSL')}"


def test_inline_pem_stores_and_tls_1_2_as_a_java_client_properties_gives_them(
    tmp_path: Path,
) -> None:
    ca = Authority(tmp_path / "ca")
    client = ca.client(cn="alice")
    broker, bootstrap = _tls_broker(tmp_path, ca, **{"ssl.enabled.protocols": "TLSv1.2"})
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SSL",
        "ssl.protocol": "TLSv1.2",
        "ssl.enabled.protocols": "TLSv1.2",
        "ssl.cipher.suites": "ECDHE-ECDSA-AES128-GCM-SHA256,ECDHE-ECDSA-AES256-GCM-SHA384",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": client.key.read_text().replace("\n", "\\n"),
        "ssl.keystore.certificate.chain": client.cert.read_text(),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": ca.cert.read_text(),
        "ssl.keymanager.algorithm": "SunX509",
        "ssl.trustmanager.algorithm": "PKIX",
    }
    try:
        assert _round_trip(config, "inline-orders") == [b"m0", b"m1", b"m2"]
    finally:
        broker.stop()


def _listener_context(
    ca: Authority, *, client_auth: bool, version: str | None = None
) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(ca.server().both)
    context.load_verify_locations(cafile=ca.cert)
    context.verify_mode = ssl.CERT_REQUIRED if client_auth else ssl.CERT_NONE
    if version is not None:
        context.minimum_version = context.maximum_version = ssl.TLSVersion[
            version.replace(".", "_")
        ]
    return context


@pytest.mark.parametrize("version", ["TLSv1.2", "TLSv1.3"])
def test_a_client_certificate_the_broker_refuses_fails_at_once_as_ssl_authentication(
    tmp_path: Path, version: str
) -> None:
    ca = Authority(tmp_path / "ca")
    stranger = Authority(tmp_path / "other", name="Other CA").client(cn="mallory")
    with handshaking_listener(_listener_context(ca, client_auth=True)) as bootstrap:
        config: dict[str, object] = {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SSL",
            "ssl.enabled.protocols": version,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(ca.cert),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(stranger.both),
            "default.api.timeout.ms": 30000,
        }
        started = time.monotonic()
        consumer = Consumer(config)
        try:
            with pytest.raises(SslAuthenticationError, match=r"(?i)unknown ca"):
                consumer.end_offsets([("orders", 0)])
        finally:
            consumer.close()
        assert time.monotonic() - started < 10  # refused, not retried until the timeout


def test_no_common_tls_version_fails_as_ssl_authentication(tmp_path: Path) -> None:
    ca = Authority(tmp_path / "ca")
    security = ClientSecurity.from_config(
        {
            "security.protocol": "SSL",
            "ssl.protocol": "TLSv1.2",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(ca.cert),
        }
    )

    async def connect(bootstrap: str) -> None:
        client = ClusterClient(bootstrap, "test", security)
        try:
            await client.any_connection()
        finally:
            await client.close()

    context = _listener_context(ca, client_auth=False, version="TLSv1.3")
    with (
        handshaking_listener(context) as bootstrap,
        pytest.raises(SslAuthenticationError, match=r"(?i)version"),
    ):
        asyncio.run(connect(bootstrap))
