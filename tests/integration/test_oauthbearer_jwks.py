"""OAUTHBEARER with signed tokens checked against a JWKS (KIP-768): confluent-kafka
fetches its token from an OIDC token endpoint (sasl.oauthbearer.method=oidc), the
broker checks it against the issuer's JWKS, and an ACL on the token's subject
applies. Tokens the JWKS did not sign, or for another audience, are refused
with Kafka's invalid_token error."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from jwt_tokens import SigningKey, claims, jwks

from kgroups.config.broker_config import BrokerConfig, ConfigError
from kgroups.security.authorizer import AclBinding, Operation, PatternType, Permission, ResourceType
from kgroups.server.broker import Broker
from kgroups.testing.thread_broker import ThreadBroker

ISSUER = "https://issuer.example"
SECURED = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@contextlib.contextmanager
def _identity_provider(jwks_body: Callable[[], str], token: Callable[[], str]) -> Iterator[str]:
    """An issuer on 127.0.0.1: GET /jwks, and POST /token (client credentials)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer(jwks_body() if self.path == "/jwks" else None)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = {"access_token": token(), "token_type": "bearer", "expires_in": 300}
            self._answer(json.dumps(body) if self.path == "/token" else None)

        def _answer(self, body: str | None) -> None:
            data = (body or "").encode()
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _broker(data: Path, jwks_url: str) -> ThreadBroker:
    return ThreadBroker(
        data,
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": SECURED,
            "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": jwks_url,
            "sasl.oauthbearer.expected.audience": "kafka",
            "sasl.oauthbearer.expected.issuer": ISSUER,
            "authorizer.class.name": STANDARD,
            "allow.everyone.if.no.acl.found": "false",
        },
    )


def _client(bootstrap: str, issuer_url: str, errors: list[KafkaError]) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.client.id": "orders-service",
            "sasl.oauthbearer.client.secret": "s3cret",
            "sasl.oauthbearer.token.endpoint.url": f"{issuer_url}/token",
            "message.timeout.ms": 20000,
            "enable.idempotence": False,
            "error_cb": errors.append,
        }
    )


def test_a_signed_token_authenticates_its_subject(tmp_path: Path) -> None:
    key = SigningKey("k1")
    stranger = SigningKey("k1", alg="RS256")  # same kid, a key the issuer never published
    signer = {"key": key, "aud": "kafka"}

    def token() -> str:
        return signer["key"].sign(claims("alice", aud=signer["aud"], iss=ISSUER))  # type: ignore[attr-defined]

    with _identity_provider(lambda: jwks(key), token) as issuer_url:
        broker = _broker(tmp_path / "data", f"{issuer_url}/jwks").start()
        try:
            _grant_alice(broker)
            errors: list[KafkaError] = []
            producer = _client(broker.bootstrap, issuer_url, errors)
            delivered: list[KafkaError | None] = []
            producer.produce("orders", b"v", on_delivery=lambda e, _m: delivered.append(e))
            producer.flush(30)
            assert delivered == [None], errors  # allowed as User:alice, the token's sub

            for signer["key"], signer["aud"] in ((stranger, "kafka"), (key, "billing")):
                refused: list[KafkaError] = []
                producer = _client(broker.bootstrap, issuer_url, refused)
                deadline = time.monotonic() + 30
                while not refused and time.monotonic() < deadline:
                    producer.poll(0.2)
                assert refused and refused[0].code() == KafkaError._AUTHENTICATION
                assert "invalid_token" in refused[0].str(), refused[0].str()
        finally:
            broker.stop()


def _grant_alice(broker: ThreadBroker) -> None:
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


@pytest.mark.parametrize("client", ["kafka-python", "aiokafka"])
def test_python_clients_present_signed_tokens(tmp_path: Path, client: str) -> None:
    key = SigningKey("k1", alg="ES256")
    path = tmp_path / "jwks.json"
    path.write_text(jwks(key))
    broker = _broker(tmp_path / "data", path.as_uri()).start()
    settings = {
        "bootstrap_servers": broker.bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "OAUTHBEARER",
    }
    try:
        _grant_alice(broker)
        if client == "kafka-python":
            from kafka import KafkaProducer
            from kafka.net.sasl.oauth import AbstractTokenProvider

            class Signed(AbstractTokenProvider):
                def token(self) -> str:
                    return key.sign(claims("alice", iss=ISSUER))

            producer = KafkaProducer(**settings, sasl_oauth_token_provider=Signed())
            try:
                producer.send("orders", b"v").get(timeout=30)
            finally:
                producer.close(5)
        else:
            from aiokafka import AIOKafkaProducer
            from aiokafka.abc import AbstractTokenProvider as AioTokenProvider

            class AioSigned(AioTokenProvider):
                async def token(self) -> str:
                    return key.sign(claims("alice", iss=ISSUER))

            async def send() -> None:
                aio = AIOKafkaProducer(**settings, sasl_oauth_token_provider=AioSigned())
                await aio.start()
                try:
                    await aio.send_and_wait("orders", b"v")
                finally:
                    await aio.stop()

            asyncio.run(send())
    finally:
        broker.stop()


def test_a_file_jwks_is_read_at_start(tmp_path: Path) -> None:
    key = SigningKey("k1", alg="ES256")
    path = tmp_path / "jwks.json"
    path.write_text(jwks(key))
    broker = _broker(tmp_path / "data", path.as_uri()).start()
    try:
        assert broker.broker is not None
        validator = broker.broker.sasl.oauth_validator("SASL_PLAINTEXT")
        assert validator(key.sign(claims("bob", iss=ISSUER))).principal == "bob"
    finally:
        broker.stop()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({}, "sasl.oauthbearer.jwks.endpoint.url"),  # signed tokens need a JWKS
        (
            {"sasl.oauthbearer.jwks.endpoint.url": "ftp://example.com/jwks"},
            "https:, http: or file:",
        ),
        ({"sasl.oauthbearer.jwt.validator.class": "com.example.Mine"}, "validator.class"),
    ],
    ids=["no-jwks", "bad-scheme", "unknown-validator"],
)
def test_settings_that_cannot_work_stop_the_broker(
    tmp_path: Path, overrides: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        config = BrokerConfig(
            {
                "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                "log.dirs": str(tmp_path),
                "sasl.enabled.mechanisms": "OAUTHBEARER",
                "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": (
                    SECURED
                ),
                **overrides,
            }
        )
        Broker(config)


def test_an_unreadable_jwks_stops_the_broker_at_start(tmp_path: Path) -> None:
    broker = _broker(tmp_path / "data", (tmp_path / "missing.json").as_uri())
    try:
        with pytest.raises(ConfigError, match="cannot read the JWKS"):
            broker.start()
    finally:
        broker.broker = None  # it never started: only its loop's thread is left to stop
        broker.stop()
