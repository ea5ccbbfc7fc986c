"""Signed OAUTHBEARER tokens (KIP-768), checked as Kafka 4.x's BrokerJwtValidator
checks them:

- a compact JWS signed with RS256/384/512, PS256/384/512 or ES256/384/512 by a
  key of the JWKS (the one its ``kid`` names); ``alg: none`` and HMAC are refused;
- ``exp`` and ``iat`` present; ``exp`` not passed and ``nbf`` (if any) reached,
  give or take ``sasl.oauthbearer.clock.skew.seconds``;
- ``iss`` equal to ``sasl.oauthbearer.expected.issuer`` when that is set;
- ``aud`` naming one of ``sasl.oauthbearer.expected.audience`` when that is set,
  and absent when it is not (as jose4j, Kafka's JWT library, requires);
- the ``sasl.oauthbearer.sub.claim.name`` claim, a non-blank string, names the
  principal; the ``sasl.oauthbearer.scope.claim.name`` claim, when a string or a
  list, holds non-blank scopes without duplicates.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kgroups.security.jwks import ALGORITHMS, Jwk
from kgroups.security.oauth_tokens import (
    InvalidToken,
    ValidToken,
    b64url_decode,
    json_object,
    jws_parts,
)


@dataclass(frozen=True, slots=True)
class ClaimRules:
    audience: frozenset[str] = frozenset()
    issuer: str | None = None
    sub_claim: str = "sub"
    scope_claim: str = "scope"
    clock_skew_s: int = 30


class SignedTokenValidator:
    def __init__(
        self,
        keys: Callable[[str | None, str], list[Jwk]],
        rules: ClaimRules,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._keys = keys
        self._rules = rules
        self._now = now

    def __call__(self, jws: str) -> ValidToken:
        header_b64, claims_b64, signature_b64 = jws_parts(jws)
        header = json_object(header_b64, "header")
        self._check_signature(header, f"{header_b64}.{claims_b64}".encode(), signature_b64)
        claims = json_object(claims_b64, "claims")
        now = self._now()
        exp = _number(claims, "exp")
        _number(claims, "iat")
        skew = self._rules.clock_skew_s
        if now >= exp + skew:
            raise InvalidToken(f"the token expired at {exp} (exp), now is {now:.0f}")
        if "nbf" in claims and now + skew < _number(claims, "nbf"):
            raise InvalidToken("the token is not valid yet (nbf)")
        self._check_issuer(claims)
        self._check_audience(claims)
        _check_scopes(self._rules.scope_claim, claims.get(self._rules.scope_claim))
        sub = claims.get(self._rules.sub_claim)
        if not isinstance(sub, str) or not sub.strip():
            raise InvalidToken(f"the token's {self._rules.sub_claim} claim is not a name")
        return ValidToken(sub.strip(), max(1, int((exp - now) * 1000)))

    def _check_signature(self, header: dict[str, object], signed: bytes, signature: str) -> None:
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in ALGORITHMS:
            raise InvalidToken(f"the token's algorithm {alg!r} is not accepted")
        if "crit" in header:
            raise InvalidToken("the token has critical header parameters")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("the token's kid is not a string")
        candidates = self._keys(kid, alg)
        if not candidates:
            raise InvalidToken(f"no key of the JWKS has kid {kid!r} for {alg}")
        raw = b64url_decode(signature)
        if not any(key.verifies(alg, signed, raw) for key in candidates):
            raise InvalidToken("the token's signature does not verify")

    def _check_issuer(self, claims: dict[str, object]) -> None:
        expected = self._rules.issuer
        if expected is not None and claims.get("iss") != expected:
            raise InvalidToken(f"the token's issuer {claims.get('iss')!r} is not {expected!r}")

    def _check_audience(self, claims: dict[str, object]) -> None:
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else None
        if aud is None:
            if self._rules.audience:
                raise InvalidToken("the token has no aud claim")
            return
        if audiences is None or not all(isinstance(a, str) for a in audiences):
            raise InvalidToken("the token's aud claim is not a string or a list of strings")
        if self._rules.audience.isdisjoint(audiences):
            raise InvalidToken(
                f"the token's audience {audiences} names none of the expected "
                f"{sorted(self._rules.audience)} (sasl.oauthbearer.expected.audience)"
            )


def _number(claims: dict[str, object], name: str) -> float:
    value = claims.get(name)
    if value is None:
        raise InvalidToken(f"the token has no {name} claim")
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise InvalidToken(f"the token's {name} claim is not a time")
    return float(value)


def _check_scopes(name: str, raw: object) -> None:
    scopes = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    seen: set[str] = set()
    for scope in scopes:
        if not isinstance(scope, str) or not scope.strip():
            raise InvalidToken(f"the token's {name} claim holds an empty scope")
        if scope.strip() in seen:
            raise InvalidToken(f"the token's {name} claim names {scope.strip()!r} twice")
        seen.add(scope.strip())
