"""SaslHandshake and SaslAuthenticate on a listener without SASL.

A SASL_* listener answers them on the connection (network/sasl_authenticator.py)
before anything reaches a handler; elsewhere Kafka refuses them with
ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from kio.schema.sasl_authenticate.v2 import SaslAuthenticateRequest, SaslAuthenticateResponse
from kio.schema.sasl_handshake.v1 import SaslHandshakeRequest, SaslHandshakeResponse
from kio.static.primitive import i64Timedelta

from kgroups.errors import ErrorCode

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


async def handshake(
    broker: BrokerApi, ctx: RequestContext, request: SaslHandshakeRequest
) -> SaslHandshakeResponse:
    # As in Kafka, no mechanism is offered where SASL is not enabled.
    return SaslHandshakeResponse(error_code=ErrorCode.illegal_sasl_state, mechanisms=())


async def authenticate(
    broker: BrokerApi, ctx: RequestContext, request: SaslAuthenticateRequest
) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(
        error_code=ErrorCode.illegal_sasl_state,
        error_message="SASL is not enabled on this listener",
        auth_bytes=b"",
        session_lifetime=i64Timedelta.parse(timedelta(0)),
    )
