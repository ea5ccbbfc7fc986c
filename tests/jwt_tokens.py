"""Signing keys, their JWKS and signed JWTs made on the spot, for tests of
OAUTHBEARER with signed tokens."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _b64_number(n: int) -> str:
    return b64url(n.to_bytes((n.bit_length() + 7) // 8, "big"))


@dataclass
class SigningKey:
    kid: str
    alg: str = "RS256"
    rsa_bits: int = 2048
    private: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey = field(init=False)

    def __post_init__(self) -> None:
        if self.alg.startswith("ES"):
            self.private = ec.generate_private_key(ec.SECP256R1())
        else:
            self.private = rsa.generate_private_key(65537, self.rsa_bits)

    def jwk(self) -> dict[str, str]:
        public = self.private.public_key()
        if isinstance(public, rsa.RSAPublicKey):
            numbers = public.public_numbers()
            return {
                "kty": "RSA",
                "kid": self.kid,
                "use": "sig",
                "n": _b64_number(numbers.n),
                "e": _b64_number(numbers.e),
            }
        point = public.public_numbers()
        return {
            "kty": "EC",
            "kid": self.kid,
            "use": "sig",
            "crv": "P-256",
            "x": b64url(point.x.to_bytes(32, "big")),
            "y": b64url(point.y.to_bytes(32, "big")),
        }

    def sign(self, claims: dict[str, object], **header: object) -> str:
        head = {"alg": self.alg, "kid": self.kid, "typ": "JWT", **header}
        signing_input = f"{b64url(json.dumps(head).encode())}.{b64url(json.dumps(claims).encode())}"
        data = signing_input.encode()
        if isinstance(self.private, rsa.RSAPrivateKey):
            signature = self.private.sign(data, padding.PKCS1v15(), hashes.SHA256())
        else:
            r, s = decode_dss_signature(self.private.sign(data, ec.ECDSA(hashes.SHA256())))
            signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return f"{signing_input}.{b64url(signature)}"


def jwks(*keys: SigningKey) -> str:
    return json.dumps({"keys": [k.jwk() for k in keys]})


def claims(sub: str = "alice", lifetime_s: float = 300, **more: object) -> dict[str, object]:
    now = time.time()
    return {
        "sub": sub,
        "iat": int(now),
        "exp": int(now + lifetime_s),
        "iss": "https://issuer.example",
        "aud": "kafka",
        **more,
    }
