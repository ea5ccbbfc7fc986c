"""SCRAM-SHA-256 against RFC 7677's example exchange, and SCRAM-SHA-512 by
a client computed here."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from kgroups.security.scram import ScramFailure, ScramServer, new_credential, password_matches

SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _rfc7677_server() -> ScramServer:
    credential = new_credential("SCRAM-SHA-256", "pencil", 4096, SALT)
    server = ScramServer("SCRAM-SHA-256", server_nonce=SERVER_NONCE)
    assert server.first(CLIENT_FIRST, {"user": credential}) == SERVER_FIRST
    return server


def test_rfc7677_exchange_gives_the_rfc_server_signature() -> None:
    server = _rfc7677_server()
    assert server.final(CLIENT_FINAL) == SERVER_FINAL
    assert server.complete and server.user == "user"


def test_a_wrong_proof_is_refused() -> None:
    server = _rfc7677_server()
    bad = CLIENT_FINAL[:-6] + b"AAAAA="
    with pytest.raises(ScramFailure):
        server.final(bad)
    assert not server.complete


def test_an_unknown_user_is_refused() -> None:
    with pytest.raises(ScramFailure):
        ScramServer("SCRAM-SHA-256").first(b"n,,n=nobody,r=abc", {})


def test_scram_sha_512_client_and_server_agree() -> None:
    credential = new_credential("SCRAM-SHA-512", "secret", 8192)
    server = ScramServer("SCRAM-SHA-512")
    first_bare = "n=al=2Cice,r=clientnonce"
    server_first = server.first(b"n,," + first_bare.encode(), {"al,ice": credential}).decode()
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha512", b"secret", base64.b64decode(attrs["s"]), 8192)
    client_key = hmac.digest(salted, b"Client Key", "sha512")
    without_proof = f"c=biws,r={attrs['r']}"
    auth = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.digest(hashlib.sha512(client_key).digest(), auth, "sha512")
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True)))
    final = server.final(f"{without_proof},p={proof.decode()}".encode())
    server_key = hmac.digest(salted, b"Server Key", "sha512")
    assert final == b"v=" + base64.b64encode(hmac.digest(server_key, auth, "sha512"))
    assert server.user == "al,ice"


def test_plain_passwords_are_checked_against_the_salted_credential() -> None:
    credential = new_credential("SCRAM-SHA-512", "right", 4096)
    assert password_matches("SCRAM-SHA-512", credential, "right")
    assert not password_matches("SCRAM-SHA-512", credential, "wrong")
