"""The server side of each SASL mechanism: PLAIN, SCRAM-SHA-*, OAUTHBEARER.

A mechanism takes the client's bytes and returns the bytes to send back,
raising AuthenticationFailed when the exchange cannot succeed; once
``complete``, ``user`` is the authenticated name and ``lifetime_ms`` the
credential's remaining life where it has one (an OAUTHBEARER token's exp).
OAUTHBEARER tokens are checked by a validator (security/oauth_tokens.py for
Kafka's unsecured default, security/jwt_validator.py for signed ones).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from kgroups.security.credentials import CredentialStore
from kgroups.security.oauth_tokens import InvalidToken, TokenValidator, unsecured_token
from kgroups.security.scram import HASHES, ScramFailure, ScramServer

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
# Kafka's OAUTHBEARER error for a token its validator refuses (RFC 7628 3.2.2).
INVALID_TOKEN = '{"status":"invalid_token"}'


class AuthenticationFailed(Exception):
    """The client's credentials were refused; the message goes to the client."""


class Mechanism:
    complete = False
    user = ""
    lifetime_ms: int | None = None
    refused: str | None = None
    """Why the last step's credential was refused while the exchange goes on
    (an OAUTHBEARER token answered with its error JSON), for the log."""

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


class OAuthBearer(Mechanism):
    """RFC 7628, as Kafka's OAuthBearerSaslServer: the client's first message
    carries a bearer token, which ``validate`` checks. A refused token is
    answered with the error JSON (``{"status":"invalid_token"}``) as a
    challenge; the client's ``%x01`` answer to it then fails the exchange with
    that JSON as the message. Any other answer starts over with a new token."""

    def __init__(self, validate: TokenValidator) -> None:
        self._validate = validate
        self._error: str | None = None

    def step(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise AuthenticationFailed(self._error)
        self._error = self.refused = None
        authzid, jws = _client_first_message(token)
        try:
            valid = self._validate(jws)
        except InvalidToken as e:
            self._error, self.refused = INVALID_TOKEN, str(e)
            return INVALID_TOKEN.encode()
        if authzid and authzid != valid.principal:
            raise AuthenticationFailed(
                f"Authentication failed: Client requested an authorization id ({authzid}) "
                f"that is different from the token's principal name ({valid.principal})"
            )
        self.user, self.complete, self.lifetime_ms = valid.principal, True, valid.lifetime_ms
        return b""


def _client_first_message(message: bytes) -> tuple[str, str]:
    """(authorization id, bearer token) of a client first message: the gs2
    header (``n,a=<authzid>,``), then key=value pairs separated by %x01, one of
    them ``auth=Bearer <token>``."""
    try:
        text = message.decode()
        gs2, _sep, rest = text.partition("\x01")
        _flag, authzid, _end = gs2.split(",")
        fields = dict(kv.split("=", 1) for kv in rest.split("\x01") if "=" in kv)
        scheme, _sp, token = fields["auth"].partition(" ")
    except (ValueError, KeyError, UnicodeDecodeError):
        raise AuthenticationFailed("Invalid OAUTHBEARER client first message") from None
    if scheme.lower() != "bearer" or not token or (authzid and not authzid.startswith("a=")):
        raise AuthenticationFailed("Invalid OAUTHBEARER client first message")
    return authzid[2:], token.strip()


def start(
    mechanism: str,
    store: CredentialStore,
    jaas_users: Mapping[str, str],
    *,
    plain_scram_users: bool = False,
    oauth: TokenValidator = unsecured_token,
) -> Mechanism:
    if mechanism == "PLAIN":
        return Plain(jaas_users, store if plain_scram_users else None)
    if mechanism in HASHES:
        return Scram(mechanism, store)
    assert mechanism == "OAUTHBEARER", mechanism
    return OAuthBearer(oauth)
