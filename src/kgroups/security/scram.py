"""SCRAM-SHA-256/512 (RFC 5802, RFC 7677): credentials, the server side and
the client side (one set of maths for the broker and kgroups' client).

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


def _client_key(mechanism: str, salted: bytes) -> bytes:
    return hmac.digest(salted, b"Client Key", HASHES[mechanism])


def _xor(a: bytes, b: bytes) -> bytes:
    """ClientProof = ClientKey XOR ClientSignature, and back."""
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def credential_from_salted(
    mechanism: str, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    digest = HASHES[mechanism]
    client_key = _client_key(mechanism, salted)
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
        client_key = _xor(proof, signature)
        if not hmac.compare_digest(hashlib.new(digest, client_key).digest(), credential.stored_key):
            raise ScramFailure("invalid credentials")
        self.complete = True
        server_signature = hmac.digest(credential.server_key, auth_message, digest)
        return b"v=" + base64.b64encode(server_signature)


def _sasl_name(user: str) -> str:
    return user.replace("=", "=3D").replace(",", "=2C")


class ScramClient:
    """The client's side of one exchange: first() -> client-first,
    final(server-first) -> client-final, verify(server-final)."""

    def __init__(self, mechanism: str, user: str, password: str, nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self._password = password
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._first_bare = f"n={_sasl_name(user)},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8", "strict")
        attrs = _attributes(text)
        if "e" in attrs:
            raise ScramFailure(f"SCRAM server error: {attrs['e']}")
        nonce, salt_b64, count = attrs.get("r", ""), attrs.get("s"), attrs.get("i", "")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise ScramFailure("SCRAM server nonce does not extend the client's")
        if salt_b64 is None or not count.isdigit():
            raise ScramFailure("SCRAM server-first message lacks a salt or iteration count")
        iterations = int(count)
        if iterations < MIN_ITERATIONS:
            raise ScramFailure(f"SCRAM iteration count {iterations} is below {MIN_ITERATIONS}")
        salt = base64.b64decode(salt_b64)
        salted = salted_password(self.mechanism, self._password, salt, iterations)
        credential = credential_from_salted(self.mechanism, salted, salt, iterations)
        digest = HASHES[self.mechanism]
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        signature = hmac.digest(credential.stored_key, auth_message, digest)
        proof = _xor(_client_key(self.mechanism, salted), signature)
        self._server_signature = hmac.digest(credential.server_key, auth_message, digest)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        """Checks the server's signature: it proves the broker knows the credential."""
        attrs = _attributes(server_final.decode("utf-8", "strict"))
        if "e" in attrs:
            raise ScramFailure(f"SCRAM server error: {attrs['e']}")
        try:
            signature = base64.b64decode(attrs.get("v", ""), validate=True)
        except ValueError:
            raise ScramFailure("SCRAM server signature is not base64") from None
        if not self._server_signature or not hmac.compare_digest(signature, self._server_signature):
            raise ScramFailure("SCRAM server signature does not match")
