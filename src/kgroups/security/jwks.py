"""A JSON Web Key Set (RFC 7517) as a set of public keys that verify JWS
signatures (RFC 7518): RSA keys for RS256/384/512 and PS256/384/512, EC keys
on P-256, P-384 and P-521 for ES256/384/512.

Needs the ``cryptography`` package; it is imported only when a broker is
configured to check signed OAUTHBEARER tokens.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from kgroups.security.oauth_tokens import InvalidToken, b64url_decode

_HASHES: dict[str, type[hashes.HashAlgorithm]] = {
    "256": hashes.SHA256,
    "384": hashes.SHA384,
    "512": hashes.SHA512,
}
_CURVES: dict[str, tuple[type[ec.EllipticCurve], str]] = {
    "P-256": (ec.SECP256R1, "ES256"),
    "P-384": (ec.SECP384R1, "ES384"),
    "P-521": (ec.SECP521R1, "ES512"),
}
ALGORITHMS = frozenset(
    {f"{family}{bits}" for family in ("RS", "PS", "ES") for bits in ("256", "384", "512")}
)
# As jose4j, which Kafka checks tokens with: smaller RSA keys are refused.
MIN_RSA_BITS = 2048


class InvalidJwks(ValueError):
    """The document is not a JWKS."""


@dataclass(frozen=True, slots=True)
class Jwk:
    kid: str | None
    key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey
    alg: str | None
    """The algorithm the key is restricted to, if the JWK names one."""

    def fits(self, alg: str) -> bool:
        if self.alg is not None and self.alg != alg:
            return False
        if isinstance(self.key, rsa.RSAPublicKey):
            return alg[:2] in ("RS", "PS")
        return _ec_alg(self.key) == alg

    def verifies(self, alg: str, signing_input: bytes, signature: bytes) -> bool:
        digest = _HASHES[alg[2:]]()
        try:
            if isinstance(self.key, rsa.RSAPublicKey):
                if self.key.key_size < MIN_RSA_BITS:
                    raise InvalidToken(f"the RSA key {self.kid!r} has fewer than 2048 bits")
                pad: padding.AsymmetricPadding = (
                    padding.PKCS1v15()
                    if alg.startswith("RS")
                    else padding.PSS(padding.MGF1(digest), digest.digest_size)
                )
                self.key.verify(signature, signing_input, pad, digest)
            else:
                size = (self.key.curve.key_size + 7) // 8
                if len(signature) != 2 * size:
                    return False
                r = int.from_bytes(signature[:size], "big")
                s = int.from_bytes(signature[size:], "big")
                self.key.verify(encode_dss_signature(r, s), signing_input, ec.ECDSA(digest))
        except InvalidSignature:
            return False
        return True


def _ec_alg(key: ec.EllipticCurvePublicKey) -> str:
    for curve, alg in _CURVES.values():
        if isinstance(key.curve, curve):
            return alg
    return ""


def parse_jwks(document: bytes | str) -> list[Jwk]:
    """The signature keys of a JWKS document; keys of other types or uses are
    skipped, a document that is not a JWKS is InvalidJwks."""
    try:
        value = json.loads(document)
    except ValueError as e:
        raise InvalidJwks(f"not JSON: {e}") from None
    keys = value.get("keys") if isinstance(value, dict) else None
    if not isinstance(keys, list):
        raise InvalidJwks('a JWKS is a JSON object with a "keys" list')
    out: list[Jwk] = []
    for entry in keys:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        try:
            key = _public_key(entry)
        except (InvalidToken, ValueError, KeyError, TypeError) as e:
            raise InvalidJwks(f"key {entry.get('kid')!r}: {e}") from None
        if key is not None:
            kid, alg = entry.get("kid"), entry.get("alg")
            out.append(
                Jwk(
                    kid if isinstance(kid, str) else None,
                    key,
                    alg if isinstance(alg, str) else None,
                )
            )
    return out


def _public_key(
    entry: Mapping[str, object],
) -> rsa.RSAPublicKey | ec.EllipticCurvePublicKey | None:
    def number(name: str) -> int:
        text = entry[name]
        if not isinstance(text, str):
            raise ValueError(f"{name} is not a base64url string")
        return int.from_bytes(b64url_decode(text), "big")

    kty = entry.get("kty")
    if kty == "RSA":
        return rsa.RSAPublicNumbers(number("e"), number("n")).public_key()
    if kty == "EC":
        crv = entry.get("crv")
        if not isinstance(crv, str) or crv not in _CURVES:
            return None
        curve = _CURVES[crv][0]()
        return ec.EllipticCurvePublicNumbers(number("x"), number("y"), curve).public_key()
    return None
