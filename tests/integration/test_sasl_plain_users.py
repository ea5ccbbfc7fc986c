"""PLAIN authenticates the users of the listener's JAAS line only, as Kafka's
PlainServerCallbackHandler does; SCRAM users log in with PLAIN only when
sasl.plain.scram.credentials.enable (kgroups' own key) says so. A
re-authentication (KIP-368) must use the mechanism of the first one."""

from __future__ import annotations

import socket
from pathlib import Path

from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2 import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1 import SaslHandshakeRequest
from sasl_fixtures import PASSWORDS, sasl_broker

from kgroups.security.scram import ScramClient

from raw_wire import call, encode_request

BOTH = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_alice="alice-secret" user_bob="bob-secret";'
)


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def _closed(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def _plain(s: socket.socket, user: str, password: str) -> ErrorCode:
    handshake, _ = call(s, SaslHandshakeRequest(mechanism="PLAIN"))
    assert handshake.error_code == ErrorCode.none
    token = f"\0{user}\0{password}".encode()
    response, _ = call(s, SaslAuthenticateRequest(auth_bytes=token))
    return ErrorCode(response.error_code)


def _scram(s: socket.socket, user: str, password: str) -> ErrorCode:
    client = ScramClient("SCRAM-SHA-256", user, password)
    handshake, _ = call(s, SaslHandshakeRequest(mechanism="SCRAM-SHA-256"))
    assert handshake.error_code == ErrorCode.none
    first, _ = call(s, SaslAuthenticateRequest(auth_bytes=client.first()))
    assert first.error_code == ErrorCode.none
    final, _ = call(s, SaslAuthenticateRequest(auth_bytes=client.final(first.auth_bytes)))
    return ErrorCode(final.error_code)


def test_a_scram_user_is_not_a_plain_user(tmp_path: Path) -> None:
    b = sasl_broker(tmp_path / "data").start()
    try:
        with _connect(b.port) as s:
            assert _scram(s, "bob", PASSWORDS["bob"]) == ErrorCode.none
        with _connect(b.port) as s:
            assert _plain(s, "bob", PASSWORDS["bob"]) == ErrorCode.sasl_authentication_failed
            assert _closed(s)
        with _connect(b.port) as s:
            assert _plain(s, "alice", PASSWORDS["alice"]) == ErrorCode.none
        with _connect(b.port) as s:
            assert _plain(s, "alice", "wrong") == ErrorCode.sasl_authentication_failed
    finally:
        b.stop()


def test_scram_users_log_in_with_plain_when_enabled(tmp_path: Path) -> None:
    b = sasl_broker(tmp_path / "data", **{"sasl.plain.scram.credentials.enable": "true"})
    b.start()
    try:
        with _connect(b.port) as s:
            assert _plain(s, "bob", PASSWORDS["bob"]) == ErrorCode.none
        with _connect(b.port) as s:
            assert _plain(s, "bob", "wrong") == ErrorCode.sasl_authentication_failed
        with _connect(b.port) as s:
            assert _plain(s, "alice", PASSWORDS["alice"]) == ErrorCode.none
    finally:
        b.stop()


def test_reauthentication_keeps_the_first_mechanism(tmp_path: Path) -> None:
    b = sasl_broker(
        tmp_path / "data", **{"listener.name.sasl_plaintext.plain.sasl.jaas.config": BOTH}
    ).start()
    try:
        with _connect(b.port) as s:
            assert _plain(s, "bob", PASSWORDS["bob"]) == ErrorCode.none
            assert _plain(s, "bob", PASSWORDS["bob"]) == ErrorCode.none  # the same: fine
            # Kafka takes the handshake, then closes at the SaslAuthenticate unanswered.
            handshake, _ = call(s, SaslHandshakeRequest(mechanism="SCRAM-SHA-256"))
            assert handshake.error_code == ErrorCode.none
            client = ScramClient("SCRAM-SHA-256", "bob", PASSWORDS["bob"])
            s.sendall(encode_request(SaslAuthenticateRequest(auth_bytes=client.first())))
            assert _closed(s)
    finally:
        b.stop()
