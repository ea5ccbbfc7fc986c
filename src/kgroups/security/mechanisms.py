"""The server side of each SASL mechanism: PLAIN, SCRAM-SHA-*, OAUTHBEARER.

A mechanism takes the client's bytes and returns the bytes to send back,
raising AuthenticationFailed when the exchange cannot succeed; once
``complete``, ``user`` is the authenticated name and ``lifetime_ms`` the
credential's remaining life where it has one (an OAUTHBEARER token's exp).
"""

from __future__ import annotations

import base64
import hmac
import json
import time
from collections.abc import Mapping

from kgroups.security.credentials import CredentialStore
from kgroups.security.scram import HASHES, ScramFailure, ScramServer

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


class AuthenticationFailed(Exception):
    """The client's credentials were refused; the message goes to the client."""


class Mechanism:
    complete = False
    user = ""
    lifetime_ms: int | None = None

    def step(self, token: bytes) -> bytes:
        raise NotImplementedError


class Plain(Mechanism):
    """RFC 4616: authzid NUL authcid NUL password, in one message.

    As Kafka's PlainServerCallbackHandler: the users are the listener's JAAS
    line's, passwords compared in constant time. ``scram_store``: also the SCRAM
    store's users (sasl.plain.scram.credentials.enable, not Kafka's)."""

    def __init__(
        self, jaas_users: Mapping[str, str], scram_store: CredentialStore | None = None
    ) -> None:
        self._store = scram_store
        self._jaas_users = jaas_users

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        if not user or not password:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: empty user or password")
        if authzid and authzid != user:
            raise AuthenticationFailed("Authentication failed: authorization id differs")
        known = self._jaas_users.get(user)
        if known is not None:
            ok = hmac.compare_digest(known.encode(), password.encode())
        else:
            ok = self._store is not None and self._store.check_password(user, password)
        if not ok:
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self.user, self.complete = user, True
        return b""


class Scram(Mechanism):
    def __init__(self, mechanism: str, store: CredentialStore) -> None:
        self._store = store
        self._server = ScramServer(mechanism)
        self._mechanism = mechanism
        self._round = 0

    def step(self, token: bytes) -> bytes:
        self._round += 1
        try:
            if self._round == 1:
                return self._server.first(token, self._store.of(self._mechanism))
            out = self._server.final(token)
        except (ScramFailure, UnicodeDecodeError):
            raise AuthenticationFailed(
                "Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {self._mechanism}"
            ) from None
        self.user, self.complete = self._server.user or "", True
        return out


def _b64url(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


class UnsecuredOAuthBearer(Mechanism):
    """RFC 7628 with Kafka's default unsecured validator: an unsigned JWS
    (``alg: none``) whose ``sub`` names the principal and whose ``exp`` is
    in the future."""

    def step(self, token: bytes) -> bytes:
        try:
            text = token.decode()
            _gs2, _sep, rest = text.partition("\x01")
            fields = dict(kv.split("=", 1) for kv in rest.split("\x01") if "=" in kv)
            scheme, _sp, jws = fields["auth"].partition(" ")
            header_b64, payload_b64, signature = jws.split(".")
            header = json.loads(_b64url(header_b64))
            claims = json.loads(_b64url(payload_b64))
        except (ValueError, KeyError, UnicodeDecodeError):
            raise AuthenticationFailed("Invalid OAUTHBEARER client first message") from None
        if scheme.lower() != "bearer" or not isinstance(claims, dict):
            raise AuthenticationFailed("Invalid OAUTHBEARER client first message")
        if not isinstance(header, dict) or header.get("alg") != "none" or signature:
            raise AuthenticationFailed("OAUTHBEARER token is not an unsecured JWS (alg: none)")
        sub, exp = claims.get("sub"), claims.get("exp")
        if not isinstance(sub, str) or not sub:
            raise AuthenticationFailed("OAUTHBEARER token has no sub claim")
        if not isinstance(exp, int | float):
            raise AuthenticationFailed("OAUTHBEARER token has no exp claim")
        left_ms = int(exp * 1000 - time.time() * 1000)
        if left_ms <= 0:
            raise AuthenticationFailed("OAUTHBEARER token has expired")
        self.user, self.complete, self.lifetime_ms = sub, True, left_ms
        return b""


def start(
    mechanism: str,
    store: CredentialStore,
    jaas_users: Mapping[str, str],
    *,
    plain_scram_users: bool = False,
) -> Mechanism:
    if mechanism == "PLAIN":
        return Plain(jaas_users, store if plain_scram_users else None)
    if mechanism in HASHES:
        return Scram(mechanism, store)
    assert mechanism == "OAUTHBEARER", mechanism
    return UnsecuredOAuthBearer()
