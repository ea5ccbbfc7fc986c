"""PLAIN and unsecured OAUTHBEARER as the broker checks them."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest

from kgroups.security.credentials import CredentialStore
from kgroups.security.mechanisms import AuthenticationFailed, OAuthBearer, Plain
from kgroups.security.oauth_tokens import unsecured_token
from kgroups.security.scram import new_credential
from kgroups.security.settings import jaas_plain_users


def _b64(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def _token(claims: dict[str, object], header: dict[str, object] | None = None) -> bytes:
    jws = f"{_b64(header or {'alg': 'none'})}.{_b64(claims)}."
    return f"n,,\x01auth=Bearer {jws}\x01\x01".encode()


def test_an_unsecured_token_names_its_subject_and_lifetime() -> None:
    mechanism = OAuthBearer(unsecured_token)
    mechanism.step(_token({"sub": "carol", "exp": time.time() + 60}))
    assert mechanism.complete and mechanism.user == "carol"
    assert mechanism.lifetime_ms is not None and 50_000 < mechanism.lifetime_ms <= 60_000


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (_token({"sub": "carol", "exp": time.time() - 1}), "expired"),
        (_token({"exp": time.time() + 60}), "no sub"),
        (_token({"sub": "carol"}), "no exp"),
        (_token({"sub": "carol", "exp": time.time() + 60}, {"alg": "RS256"}), "alg: none"),
        (b"n,,\x01auth=Bearer nonsense\x01\x01", "3 parts"),
    ],
    ids=["expired", "no-sub", "no-exp", "signed", "not-a-jws"],
)
def test_a_bad_token_is_answered_with_kafkas_error_json_then_refused(
    token: bytes, reason: str
) -> None:
    # As Kafka's OAuthBearerSaslServer: the error JSON comes as a challenge, the
    # client answers %x01, and the exchange fails with the JSON as its message.
    mechanism = OAuthBearer(unsecured_token)
    assert mechanism.step(token) == b'{"status":"invalid_token"}'
    assert not mechanism.complete
    assert mechanism.refused is not None and reason in mechanism.refused
    with pytest.raises(AuthenticationFailed) as refused:
        mechanism.step(b"\x01")
    assert str(refused.value) == '{"status":"invalid_token"}'


def test_an_authorization_id_must_be_the_tokens_principal() -> None:
    token = _token({"sub": "carol", "exp": time.time() + 60}).replace(b"n,,", b"n,a=carol,")
    mechanism = OAuthBearer(unsecured_token)
    mechanism.step(token)
    assert mechanism.user == "carol"
    with pytest.raises(AuthenticationFailed, match="authorization id"):
        OAuthBearer(unsecured_token).step(token.replace(b"a=carol", b"a=admin"))


def test_a_message_that_is_not_oauthbearer_is_refused_at_once() -> None:
    with pytest.raises(AuthenticationFailed, match="client first message"):
        OAuthBearer(unsecured_token).step(b"n,,\x01user=carol\x01\x01")


def test_plain_checks_jaas_users_and_the_store_only_when_asked(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path)
    store.apply([("bob", "SCRAM-SHA-256", new_credential("SCRAM-SHA-256", "bob-pw"))], [])
    users = jaas_plain_users(
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw";'
    )
    assert users == {"admin": "admin-pw", "alice": "alice-pw"}
    for user, password in (("alice", "alice-pw"), ("bob", "bob-pw")):
        mechanism = Plain(users, store)
        mechanism.step(f"\0{user}\0{password}".encode())
        assert mechanism.user == user
    for token in (b"\0alice\0bob-pw", b"\0bob\0alice-pw", b"\0nobody\0x", b"bob\0alice\0alice-pw"):
        with pytest.raises(AuthenticationFailed):
            Plain(users, store).step(token)
    # As Kafka's PlainServerCallbackHandler: without the store, only the JAAS users.
    Plain(users).step(b"\0alice\0alice-pw")
    with pytest.raises(AuthenticationFailed):
        Plain(users).step(b"\0bob\0bob-pw")
