"""SCRAM-SHA-256/512 (RFC 5802, RFC 7677): credentials and the server side.

The broker keeps a salted credential per user and mechanism, never the
password: salt, iterations, StoredKey = H(ClientKey) and ServerKey. A proof
from the client is checked against StoredKey; the server's signature proves
to the client that the broker knows ServerKey.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

# Kafka's bounds on the iteration count of a SCRAM credential.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# The mechanism numbers of DescribeUserScramCredentials/AlterUserScramCredentials.
MECHANISM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
TYPE_OF_MECHANISM = {name: number for number, name in MECHANISM_TYPES.items()}


class ScramFailure(ValueError):
    """A SCRAM exchange that cannot succeed; the message says why."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode(), salt, iterations)


def credential_from_salted(
    mechanism: str, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    digest = HASHES[mechanism]
    client_key = hmac.digest(salted, b"Client Key", digest)
    return ScramCredential(
        salt=salt,
        stored_key=hashlib.new(digest, client_key).digest(),
        server_key=hmac.digest(salted, b"Server Key", digest),
        iterations=iterations,
    )


def new_credential(
    mechanism: str, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = salted_password(mechanism, password, salt, iterations)
    return credential_from_salted(mechanism, salted, salt, iterations)


def password_matches(mechanism: str, credential: ScramCredential, password: str) -> bool:
    """Whether ``password`` is the one ``credential`` was made from (SASL/PLAIN)."""
    again = new_credential(mechanism, password, credential.iterations, credential.salt)
    return hmac.compare_digest(again.stored_key, credential.stored_key)


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramFailure(f"invalid SCRAM attribute {part!r}")
        out.setdefault(part[0], part[2:])
    return out


def _user_name(saslname: str) -> str:
    # RFC 5802: ',' and '=' travel as '=2C' and '=3D'.
    return saslname.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One SCRAM exchange: client-first -> server-first, client-final -> server-final."""

    def __init__(self, mechanism: str, server_nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self._server_nonce = server_nonce or secrets.token_urlsafe(24)
        self.user: str | None = None
        self._credential: ScramCredential | None = None
        self._first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self.complete = False

    def first(self, message: bytes, credential_of: Mapping[str, ScramCredential]) -> bytes:
        text = message.decode("utf-8", "strict")
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise ScramFailure("invalid SCRAM client-first message")
        self._first_bare = parts[2]
        attrs = _attributes(self._first_bare)
        if "n" not in attrs or "r" not in attrs:
            raise ScramFailure("SCRAM client-first message lacks a user name or nonce")
        self.user = _user_name(attrs["n"])
        authzid = parts[1]
        if authzid and authzid != "a=" + attrs["n"]:
            raise ScramFailure("SCRAM authorization id differs from the user name")
        credential = credential_of.get(self.user)
        if credential is None:
            raise ScramFailure(f"unknown user {self.user!r}")
        self._credential = credential
        self._nonce = attrs["r"] + self._server_nonce
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def final(self, message: bytes) -> bytes:
        credential = self._credential
        if credential is None:
            raise ScramFailure("SCRAM client-final message before client-first")
        text = message.decode("utf-8", "strict")
        without_proof, sep, proof_part = text.rpartition(",p=")
        if not sep:
            raise ScramFailure("SCRAM client-final message lacks a proof")
        attrs = _attributes(without_proof)
        if attrs.get("r") != self._nonce:
            raise ScramFailure("SCRAM nonce mismatch")
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        digest = HASHES[self.mechanism]
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise ScramFailure("SCRAM proof is not base64") from None
        signature = hmac.digest(credential.stored_key, auth_message, digest)
        if len(proof) != len(signature):
            raise ScramFailure("invalid SCRAM proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(digest, client_key).digest(), credential.stored_key):
            raise ScramFailure("invalid credentials")
        self.complete = True
        server_signature = hmac.digest(credential.server_key, auth_message, digest)
        return b"v=" + base64.b64encode(server_signature)
