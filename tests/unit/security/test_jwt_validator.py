"""Signed OAUTHBEARER tokens checked against a JWKS, as Kafka's
BrokerJwtValidator checks them."""

from __future__ import annotations

import json
import time

import pytest
from jwt_tokens import SigningKey, b64url, claims, jwks

from kgroups.security.jwks import parse_jwks
from kgroups.security.jwt_validator import ClaimRules, SignedTokenValidator
from kgroups.security.oauth_tokens import InvalidToken

RSA = SigningKey("rsa-1")
EC = SigningKey("ec-1", alg="ES256")
RULES = ClaimRules(audience=frozenset({"kafka"}), issuer="https://issuer.example")


def _validator(
    rules: ClaimRules = RULES, *keys: SigningKey, now: float | None = None
) -> SignedTokenValidator:
    key_set = parse_jwks(jwks(*(keys or (RSA, EC))))

    def keys_for(kid: str | None, alg: str) -> list:  # type: ignore[type-arg]
        return [k for k in key_set if k.fits(alg) and kid in (None, k.kid)]

    return SignedTokenValidator(keys_for, rules, time.time if now is None else lambda: now)


@pytest.mark.parametrize("key", [RSA, EC], ids=["RS256", "ES256"])
def test_a_signed_token_names_its_subject_and_lifetime(key: SigningKey) -> None:
    valid = _validator()(key.sign(claims("alice", lifetime_s=120)))
    assert valid.principal == "alice"
    assert 100_000 < valid.lifetime_ms <= 120_000


def _refusal(token: str, validator: SignedTokenValidator | None = None) -> str:
    with pytest.raises(InvalidToken) as refused:
        (validator or _validator())(token)
    return str(refused.value)


def test_an_expired_token_is_refused_beyond_the_clock_skew() -> None:
    late = RSA.sign(claims(lifetime_s=-10))
    assert _validator()(late).principal == "alice"  # within the default 30 s
    no_skew = ClaimRules(frozenset({"kafka"}), "https://issuer.example", clock_skew_s=0)
    assert "expired" in _refusal(late, _validator(no_skew))
    assert "expired" in _refusal(RSA.sign(claims(lifetime_s=-60)))


def test_a_token_not_valid_yet_is_refused() -> None:
    assert "nbf" in _refusal(RSA.sign(claims(nbf=time.time() + 600)))


def test_the_audience_must_be_expected() -> None:
    assert "audience" in _refusal(RSA.sign(claims(aud=["billing", "web"])))
    assert _validator()(RSA.sign(claims(aud=["web", "kafka"]))).principal == "alice"
    assert "no aud" in _refusal(RSA.sign({k: v for k, v in claims().items() if k != "aud"}))
    # With no expected audience, a token that names one is refused (as jose4j does).
    assert "audience" in _refusal(RSA.sign(claims()), _validator(ClaimRules()))


def test_the_issuer_must_be_the_expected_one() -> None:
    assert "issuer" in _refusal(RSA.sign(claims(iss="https://elsewhere.example")))


def test_a_bad_signature_is_refused() -> None:
    header, _claims, signature = RSA.sign(claims("alice")).split(".")
    forged = f"{header}.{b64url(json.dumps(claims('admin')).encode())}.{signature}"
    assert "signature" in _refusal(forged)
    other = SigningKey("rsa-1")  # same kid, another key
    assert "signature" in _refusal(other.sign(claims()))


def test_an_unknown_key_id_is_refused() -> None:
    assert "kid 'rsa-2'" in _refusal(SigningKey("rsa-2").sign(claims()))


@pytest.mark.parametrize("alg", ["none", "HS256", None])
def test_unsigned_and_hmac_tokens_are_refused(alg: str | None) -> None:
    header = b64url(json.dumps({"alg": alg, "kid": "rsa-1"}).encode())
    token = f"{header}.{b64url(json.dumps(claims()).encode())}."
    assert "algorithm" in _refusal(token)


def test_the_algorithm_must_fit_the_key() -> None:
    # An RSA signature presented as ES256 finds no EC key with that kid.
    _header, body, signature = RSA.sign(claims()).split(".")
    relabelled = b64url(json.dumps({"alg": "ES256", "kid": "rsa-1"}).encode())
    assert "kid" in _refusal(f"{relabelled}.{body}.{signature}")


def test_exp_iat_and_the_subject_are_required() -> None:
    assert "iat" in _refusal(RSA.sign({k: v for k, v in claims().items() if k != "iat"}))
    assert "exp" in _refusal(RSA.sign({k: v for k, v in claims().items() if k != "exp"}))
    assert "sub" in _refusal(RSA.sign(claims(sub="  ")))


def test_the_subject_and_scope_claims_are_configurable() -> None:
    rules = ClaimRules(frozenset({"kafka"}), None, sub_claim="client_id", scope_claim="scp")
    token = RSA.sign(claims(client_id="svc-orders", scp=["read", "write"]))
    assert _validator(rules)(token).principal == "svc-orders"
    assert "twice" in _refusal(RSA.sign(claims(client_id="x", scp=["a", "a"])), _validator(rules))
    assert "empty scope" in _refusal(RSA.sign(claims(scope=" ")))


def test_small_rsa_keys_are_refused() -> None:
    small = SigningKey("small", rsa_bits=1024)
    assert "2048" in _refusal(small.sign(claims()), _validator(RULES, small))


@pytest.mark.parametrize(
    "token", ["a.b", "not base64!.e30.", f"{b64url(b'[1]')}.e30.", "..."], ids=str
)
def test_malformed_tokens_are_refused(token: str) -> None:
    _refusal(token)
