"""What an OAUTHBEARER token validator is, and Kafka's default one for
development: unsigned tokens (``alg: none``) whose ``sub`` names the principal.

A validator takes the compact JWS of a client's first message and returns the
principal's name and the token's remaining life, or raises InvalidToken; the
reason is logged by the broker, never sent to the client, which is told only
Kafka's ``{"status":"invalid_token"}``.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable
from dataclasses import dataclass


class InvalidToken(Exception):
    """A token the validator refuses; the message says why (for the log)."""


@dataclass(frozen=True, slots=True)
class ValidToken:
    principal: str
    lifetime_ms: int
    """Until the token expires, from now."""


TokenValidator = Callable[[str], ValidToken]


def b64url_decode(part: str) -> bytes:
    """base64url without padding (RFC 7515); anything else is InvalidToken."""
    try:
        return base64.b64decode(part + "=" * (-len(part) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise InvalidToken("a part of the token is not base64url") from None


def json_object(part: str, what: str) -> dict[str, object]:
    try:
        value = json.loads(b64url_decode(part))
    except (UnicodeDecodeError, ValueError):
        raise InvalidToken(f"the token's {what} is not JSON") from None
    if not isinstance(value, dict):
        raise InvalidToken(f"the token's {what} is not a JSON object")
    return value


def jws_parts(jws: str) -> tuple[str, str, str]:
    parts = jws.split(".")
    if len(parts) != 3:
        raise InvalidToken(f"a compact JWS has 3 parts separated by '.', this one {len(parts)}")
    return parts[0], parts[1], parts[2]


def unsecured_token(jws: str, now: Callable[[], float] = time.time) -> ValidToken:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler: no signature, so
    anyone may claim any name; for development only."""
    header_b64, claims_b64, signature = jws_parts(jws)
    header = json_object(header_b64, "header")
    claims = json_object(claims_b64, "claims")
    if header.get("alg") != "none" or signature:
        raise InvalidToken("the token is not an unsecured JWS (alg: none)")
    sub, exp = claims.get("sub"), claims.get("exp")
    if not isinstance(sub, str) or not sub:
        raise InvalidToken("the token has no sub claim")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        raise InvalidToken("the token has no exp claim")
    left_ms = int(exp * 1000 - now() * 1000)
    if left_ms <= 0:
        raise InvalidToken("the token has expired")
    return ValidToken(sub, left_ms)
