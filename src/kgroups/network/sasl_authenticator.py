"""SASL on one connection of a SASL_* listener (Kafka's SaslServerAuthenticator).

Before authentication only ApiVersions, SaslHandshake and SaslAuthenticate
are answered; any other request closes the connection. A refused
authentication (a wrong credential, a mechanism not enabled, a request out of
order) is answered after connection.failed.authentication.delay.ms, as Kafka
does to slow down clients that retry at once, then the connection is closed.
With connections.max.reauth.ms (KIP-368) the session has a lifetime: the
client re-authenticates on the same connection (SaslHandshake and
SaslAuthenticate again, as the same principal with the same mechanism), and
a request that arrives after the session expired closes the connection.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import TYPE_CHECKING

from kio.schema.sasl_authenticate.v2 import SaslAuthenticateResponse
from kio.schema.sasl_handshake.v1 import SaslHandshakeResponse
from kio.static.primitive import i64Timedelta

from kgroups.errors import ErrorCode
from kgroups.handlers.dispatch import BadRequest, dispatch
from kgroups.protocol import apis
from kgroups.protocol.framing import frame
from kgroups.protocol.header import MalformedHeader, peek_api, read_request_header, response_header
from kgroups.runtime.context import ConnectionInfo
from kgroups.security.mechanisms import AuthenticationFailed, Mechanism, start

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.security.peer import ConnectionSecurity

log = logging.getLogger(__name__)

SASL_KEYS = frozenset((apis.SASL_HANDSHAKE, apis.SASL_AUTHENTICATE))
# The first two bytes of a request frame: its API key.
_SASL_PREFIXES = frozenset(key.to_bytes(2, "big") for key in SASL_KEYS)


class SaslAuthenticator:
    def __init__(
        self,
        broker: BrokerApi,
        security: ConnectionSecurity,
        host: str,
        connection: ConnectionInfo | None = None,
    ) -> None:
        self._broker = broker
        self._security = security
        self._host = host
        self._connection = connection
        self._mechanism: Mechanism | None = None
        # The mechanism of the first authentication, which a re-authentication must use.
        self._session_mechanism: str | None = None
        self._mechanism_name = ""
        self._bad_mechanism: str | None = None
        self._expires_at: float | None = None
        # After a v0 SaslHandshake, Kafka's legacy framing: raw SASL tokens in
        # size-prefixed frames, without Kafka headers.
        self._raw_tokens = False
        self._loop = asyncio.get_running_loop()

    def intercepts(self, request: bytes | bytearray) -> bool:
        """Whether ``request`` is this object's to answer rather than dispatch's."""
        if not self._security.authenticated:
            return True
        if bytes(request[:2]) in _SASL_PREFIXES:
            return True
        return self._expires_at is not None and self._loop.time() >= self._expires_at

    async def answer(self, request: bytes | bytearray) -> tuple[bytes | None, bool]:
        """(response, close the connection after it)."""
        if isinstance(request, bytearray):
            request = bytes(request)
        if self._raw_tokens:
            return await self._raw_token(request)
        try:
            api_key, version, correlation_id = peek_api(request)
        except MalformedHeader as e:
            raise BadRequest(str(e)) from None
        if api_key == apis.API_VERSIONS:
            answer = await dispatch(
                self._broker, request, self._host, self._security, connection=self._connection
            )
            return answer, False
        if api_key not in SASL_KEYS:
            if self._security.authenticated:
                raise BadRequest("the SASL session expired; re-authentication is required")
            raise BadRequest(f"api key {api_key} before SASL authentication")
        if not apis.is_supported(api_key, version):
            raise BadRequest(f"unsupported SASL request version {version}")
        codec = apis.codec(api_key, version)
        try:
            _header, offset = read_request_header(request, codec.request_header_flexible)
            body, _size = codec.read_request(request, offset)
        except Exception as e:
            raise BadRequest(f"malformed SASL request: {e}") from None
        response: object
        if api_key == apis.SASL_HANDSHAKE:
            response, close = self._handshake(body.mechanism)
            self._raw_tokens = version == 0 and not close
        elif self._bad_mechanism is not None:
            await self._refuse_unanswered()
            return None, True
        else:
            response, close = self._authenticate(body.auth_bytes)
        if close:
            await self._refusal_delay()
        payload = codec.encode_response(response)
        return frame(
            response_header(correlation_id, codec.response_header_flexible) + payload
        ), close

    def _handshake(self, mechanism: str) -> tuple[SaslHandshakeResponse, bool]:
        sasl = self._broker.sasl
        listener = self._security.listener
        enabled = sasl.mechanisms(listener)
        if self._mechanism is not None or self._bad_mechanism is not None:
            return SaslHandshakeResponse(
                error_code=ErrorCode.illegal_sasl_state, mechanisms=enabled
            ), True
        if mechanism not in enabled:
            log.info(
                "SASL authentication from %s failed: mechanism %s is not enabled",
                self._host,
                mechanism,
            )
            return SaslHandshakeResponse(
                error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=enabled
            ), True
        if self._session_mechanism not in (None, mechanism):
            # KIP-368, as Kafka: the handshake is taken, the SaslAuthenticate after
            # it closes the connection unanswered.
            self._bad_mechanism = (
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self._session_mechanism}'"
            )
            return SaslHandshakeResponse(error_code=ErrorCode.none, mechanisms=enabled), False
        self._mechanism_name = mechanism
        self._mechanism = start(
            mechanism,
            sasl.credentials,
            sasl.plain_users(listener),
            plain_scram_users=sasl.plain_scram_users,
            oauth=sasl.oauth_validator(listener),
        )
        return SaslHandshakeResponse(error_code=ErrorCode.none, mechanisms=enabled), False

    def _authenticate(self, token: bytes) -> tuple[SaslAuthenticateResponse, bool]:
        mechanism = self._mechanism
        if mechanism is None:
            return _authenticate_response(
                ErrorCode.illegal_sasl_state, "SaslAuthenticate before SaslHandshake"
            ), True
        try:
            out = mechanism.step(token)
        except AuthenticationFailed as e:
            log.info("SASL authentication from %s failed: %s", self._host, e)
            return _authenticate_response(ErrorCode.sasl_authentication_failed, str(e)), True
        if mechanism.refused is not None:
            log.info("SASL authentication from %s failed: %s", self._host, mechanism.refused)
        if not mechanism.complete:
            return _authenticate_response(ErrorCode.none, None, out), False
        self._mechanism = None
        if self._session_mechanism is None:
            self._session_mechanism = self._mechanism_name
        principal = f"User:{mechanism.user}"
        security = self._security
        if security.authenticated and principal != security.principal:
            # KIP-368: a re-authentication may not change who the connection is.
            return _authenticate_response(
                ErrorCode.sasl_authentication_failed,
                "Cannot change principals during re-authentication",
            ), True
        security.principal, security.authenticated = principal, True
        lifetime_ms = self._lifetime_ms(mechanism.lifetime_ms)
        self._expires_at = None if lifetime_ms == 0 else self._loop.time() + lifetime_ms / 1000
        return _authenticate_response(ErrorCode.none, None, out, lifetime_ms), False

    async def _refuse_unanswered(self) -> None:
        log.info("SASL re-authentication from %s failed: %s", self._host, self._bad_mechanism)
        await self._refusal_delay()

    async def _raw_token(self, token: bytes) -> tuple[bytes | None, bool]:
        """A legacy token: a refusal has no way to be told, so it closes."""
        if self._bad_mechanism is not None:
            await self._refuse_unanswered()
            return None, True
        response, close = self._authenticate(token)
        if close:
            await self._refusal_delay()
            return None, True
        if self._security.authenticated:
            self._raw_tokens = False
        return frame(response.auth_bytes), False

    async def _refusal_delay(self) -> None:
        delay_ms = self._broker.config.get_int("connection.failed.authentication.delay.ms")
        await asyncio.sleep(delay_ms / 1000)

    def _lifetime_ms(self, credential_ms: int | None) -> int:
        """The session lifetime: connections.max.reauth.ms, shortened to the
        credential's own expiry; 0 when sessions never expire."""
        reauth_ms = self._broker.config.get_int("connections.max.reauth.ms")
        if reauth_ms <= 0:
            return 0
        return reauth_ms if credential_ms is None else min(reauth_ms, credential_ms)


def _authenticate_response(
    error: ErrorCode, message: str | None, auth_bytes: bytes = b"", lifetime_ms: int = 0
) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(
        error_code=error,
        error_message=message,
        auth_bytes=auth_bytes,
        session_lifetime=i64Timedelta.parse(timedelta(milliseconds=lifetime_ms)),
    )
