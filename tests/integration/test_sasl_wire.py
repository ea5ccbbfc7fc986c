"""SASL_PLAINTEXT on the wire: nothing but ApiVersions and the SASL exchange
before authentication, the failure delay, session expiry (KIP-368), hostile
frames before authentication, and credentials that survive a restart."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kio.schema.api_versions.v3 import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.sasl_authenticate.v2 import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1 import SaslHandshakeRequest
from sasl_fixtures import PASSWORDS, sasl_broker

from kgroups.testing.thread_broker import ThreadBroker

from raw_wire import call, encode_request, read_frame
from wire_fuzz import framed, mutant, seeds


@pytest.fixture
def sasl(tmp_path: Path) -> Iterator[ThreadBroker]:
    b = sasl_broker(tmp_path / "data").start()
    try:
        yield b
    finally:
        b.stop()


def _connect(b: ThreadBroker) -> socket.socket:
    return socket.create_connection(("127.0.0.1", b.port), timeout=30)


def _closed(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


METADATA = MetadataRequest(
    topics=None,
    allow_auto_topic_creation=False,
    include_topic_authorized_operations=False,
)
API_VERSIONS = ApiVersionsRequest(client_software_name="t", client_software_version="1")


def _plain(s: socket.socket, user: str, password: str) -> object:
    handshake, _ = call(s, SaslHandshakeRequest(mechanism="PLAIN"))
    assert handshake.error_code == ErrorCode.none
    token = f"\0{user}\0{password}".encode()
    response, _ = call(s, SaslAuthenticateRequest(auth_bytes=token))
    return response


def test_metadata_before_authentication_closes_the_connection(sasl: ThreadBroker) -> None:
    with _connect(sasl) as s:
        versions, _ = call(s, API_VERSIONS)
        assert versions.error_code == ErrorCode.none
        assert {17, 36} <= {k.api_key for k in versions.api_keys}
        s.sendall(encode_request(METADATA))
        assert _closed(s)


def test_metadata_after_authentication_is_answered(sasl: ThreadBroker) -> None:
    with _connect(sasl) as s:
        response = _plain(s, "alice", PASSWORDS["alice"])
        assert response.error_code == ErrorCode.none  # type: ignore[attr-defined]
        metadata, _ = call(s, METADATA)
        assert len(metadata.brokers) == 1


def test_legacy_raw_tokens_after_a_v0_handshake(sasl: ThreadBroker) -> None:
    from kio.schema.sasl_handshake.v0 import SaslHandshakeRequest as HandshakeV0

    with _connect(sasl) as s:
        handshake, _ = call(s, HandshakeV0(mechanism="PLAIN"))
        assert handshake.error_code == ErrorCode.none
        s.sendall(framed(b"\0alice\0" + PASSWORDS["alice"].encode()))
        assert read_frame(s) == b""  # PLAIN's empty server token
        metadata, _ = call(s, METADATA)
        assert len(metadata.brokers) == 1
    with _connect(sasl) as s:
        call(s, HandshakeV0(mechanism="PLAIN"))
        s.sendall(framed(b"\0alice\0wrong"))
        assert _closed(s)


def test_an_unknown_mechanism_gets_the_enabled_list_and_a_close(sasl: ThreadBroker) -> None:
    with _connect(sasl) as s:
        response, _ = call(s, SaslHandshakeRequest(mechanism="GSSAPI"))
        assert response.error_code == ErrorCode.unsupported_sasl_mechanism
        assert list(response.mechanisms) == [
            "PLAIN",
            "SCRAM-SHA-256",
            "SCRAM-SHA-512",
            "OAUTHBEARER",
        ]
        assert _closed(s)


def _wrong_password(s: socket.socket) -> tuple[int, str | None]:
    response = _plain(s, "alice", "wrong")
    return response.error_code, response.error_message  # type: ignore[attr-defined]


def _mechanism_not_enabled(s: socket.socket) -> tuple[int, str | None]:
    response, _ = call(s, SaslHandshakeRequest(mechanism="GSSAPI"))
    return response.error_code, None


def _second_handshake(s: socket.socket) -> tuple[int, str | None]:
    call(s, SaslHandshakeRequest(mechanism="PLAIN"))
    response, _ = call(s, SaslHandshakeRequest(mechanism="PLAIN"))
    return response.error_code, None


@pytest.mark.parametrize(
    ("refusal", "error"),
    [
        (_wrong_password, ErrorCode.sasl_authentication_failed),
        (_mechanism_not_enabled, ErrorCode.unsupported_sasl_mechanism),
        (_second_handshake, ErrorCode.illegal_sasl_state),
    ],
    ids=["wrong-password", "mechanism-not-enabled", "second-handshake"],
)
def test_a_refused_authentication_is_answered_late_then_closed(
    tmp_path: Path,
    refusal: Callable[[socket.socket], tuple[int, str | None]],
    error: ErrorCode,
) -> None:
    # As in Kafka, every refusal during authentication waits
    # connection.failed.authentication.delay.ms, not only a wrong password.
    b = sasl_broker(tmp_path / "d", **{"connection.failed.authentication.delay.ms": "400"})
    b.start()
    try:
        with _connect(b) as s:
            started = time.monotonic()
            code, message = refusal(s)
            assert time.monotonic() - started >= 0.4
            assert code == error
            if error == ErrorCode.sasl_authentication_failed:
                assert message is not None and "Invalid username or password" in message
            assert _closed(s)
    finally:
        b.stop()


def test_an_expired_session_is_closed_and_a_reauthenticated_one_is_not(tmp_path: Path) -> None:
    b = sasl_broker(tmp_path / "d", **{"connections.max.reauth.ms": "500"})
    b.start()
    try:
        with _connect(b) as s, _connect(b) as renewed:
            for conn in (s, renewed):
                response = _plain(conn, "alice", PASSWORDS["alice"])
                assert response.session_lifetime.total_seconds() == 0.5  # type: ignore[attr-defined]
            time.sleep(0.3)
            assert _plain(renewed, "alice", PASSWORDS["alice"]).error_code == ErrorCode.none  # type: ignore[attr-defined]
            time.sleep(0.3)
            metadata, _ = call(renewed, METADATA)
            assert len(metadata.brokers) == 1
            s.sendall(encode_request(METADATA))
            assert _closed(s)
    finally:
        b.stop()


def test_reauthentication_cannot_change_the_principal(tmp_path: Path) -> None:
    # bob is a PLAIN user too here, so only the change of principal refuses him.
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'user_alice="alice-secret" user_bob="bob-secret";'
    )
    b = sasl_broker(tmp_path / "d", **{"listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas})
    b.start()
    try:
        with _connect(b) as s:
            assert _plain(s, "alice", PASSWORDS["alice"]).error_code == ErrorCode.none  # type: ignore[attr-defined]
            response = _plain(s, "bob", PASSWORDS["bob"])
            assert response.error_code == ErrorCode.sasl_authentication_failed  # type: ignore[attr-defined]
            assert "Cannot change principals" in response.error_message  # type: ignore[attr-defined]
            assert _closed(s)
    finally:
        b.stop()


def test_hostile_frames_before_authentication_leave_the_broker_serving(
    sasl: ThreadBroker,
) -> None:
    import random

    rng = random.Random(7)
    all_seeds = seeds(with_nulls=False)
    for _ in range(200):
        seed = rng.choice(all_seeds)
        with _connect(sasl) as s:
            s.settimeout(5)
            s.sendall(framed(mutant(rng, seed)))
            s.shutdown(socket.SHUT_WR)
            try:
                while s.recv(65536):
                    pass
            except (TimeoutError, ConnectionResetError):
                pass
    with _connect(sasl) as s:
        assert _plain(s, "alice", PASSWORDS["alice"]).error_code == ErrorCode.none  # type: ignore[attr-defined]
    assert sasl.broker is not None
    assert sasl.run(_topics(sasl)) == []


async def _topics(b: ThreadBroker) -> list[str]:
    assert b.broker is not None
    return sorted(b.broker.topics.names())


def test_scram_credentials_survive_a_restart(tmp_path: Path) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )
    from sasl_fixtures import confluent_config

    b = sasl_broker(tmp_path / "d").start()
    try:
        admin = AdminClient(confluent_config(b.bootstrap, "PLAIN"))
        upsert = UserScramCredentialUpsertion(
            "erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"erin-secret"
        )
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(30)
        b.restart()
        erin = confluent_config(b.bootstrap, "SCRAM-SHA-512", "erin", "erin-secret")
        assert AdminClient(erin).list_topics(timeout=30).brokers
        stored = (tmp_path / "d" / "scram-credentials.json").read_text()
        assert "erin-secret" not in stored
    finally:
        b.stop()


def test_an_oauthbearer_session_ends_with_its_token(tmp_path: Path) -> None:
    import base64
    import json

    def b64(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    b = sasl_broker(tmp_path / "d", **{"connections.max.reauth.ms": "60000"}).start()
    try:
        with _connect(b) as s:
            handshake, _ = call(s, SaslHandshakeRequest(mechanism="OAUTHBEARER"))
            assert handshake.error_code == ErrorCode.none
            jws = f"{b64({'alg': 'none'})}.{b64({'sub': 'carol', 'exp': time.time() + 3})}."
            token = f"n,,\x01auth=Bearer {jws}\x01\x01".encode()
            response, _ = call(s, SaslAuthenticateRequest(auth_bytes=token))
            assert response.error_code == ErrorCode.none
            assert 1 < response.session_lifetime.total_seconds() <= 3
    finally:
        b.stop()
