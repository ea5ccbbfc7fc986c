"""The JWKS is read at start, again when a token names a key id it lacks (at
most once per retry.backoff.max.ms), and failed reads keep the last keys."""

from __future__ import annotations

import asyncio

import pytest
from jwt_tokens import SigningKey, jwks

from kgroups.config.errors import ConfigError
from kgroups.security.jwks import Jwk, parse_jwks
from kgroups.security.jwks_source import JwksSource

OLD, NEW = SigningKey("old"), SigningKey("new")


class Issuer:
    """What the endpoint serves, and how often it was read."""

    def __init__(self) -> None:
        self.body: str | None = jwks(OLD)
        self.reads = 0

    def read(self, _url: str) -> list[Jwk]:
        self.reads += 1
        if self.body is None:
            raise OSError("connection refused")
        return parse_jwks(self.body)


def _source(issuer: Issuer, clock: list[float]) -> JwksSource:
    return JwksSource(
        "https://idp.example/jwks",
        "sasl.oauthbearer.jwks.endpoint.url",
        refresh_ms=3_600_000,
        backoff_ms=1,
        backoff_max_ms=10_000,
        read=issuer.read,
        monotonic=lambda: clock[0],
    )


async def _settle(condition: object, timeout_s: float = 10) -> None:
    for _ in range(int(timeout_s / 0.01)):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not reached")


def test_an_unknown_key_id_asks_for_an_early_read_once_per_backoff() -> None:
    async def scenario() -> None:
        issuer, clock = Issuer(), [100.0]
        source = _source(issuer, clock)
        await source.start()
        loop = asyncio.create_task(source.refresh_loop())
        try:
            await asyncio.sleep(0)
            assert [k.kid for k in source.keys_for("old", "RS256")] == ["old"]
            issuer.body = jwks(OLD, NEW)  # the issuer rotates
            assert source.keys_for("new", "RS256") == []  # refused, read asked for
            await _settle(lambda: source.keys_for("new", "RS256"))
            assert issuer.reads == 2
            # Made-up key ids within retry.backoff.max.ms ask for nothing more.
            for _ in range(5):
                assert source.keys_for("made-up", "RS256") == []
            await asyncio.sleep(0.1)
            assert issuer.reads == 2
            clock[0] += 10.0
            source.keys_for("made-up", "RS256")
            await _settle(lambda: issuer.reads == 3)
        finally:
            loop.cancel()

    asyncio.run(scenario())


def test_a_failed_read_keeps_the_last_keys_and_is_retried() -> None:
    async def scenario() -> None:
        issuer, clock = Issuer(), [100.0]
        source = _source(issuer, clock)
        await source.start()
        loop = asyncio.create_task(source.refresh_loop())
        try:
            await asyncio.sleep(0)
            issuer.body = None
            source.keys_for("new", "RS256")
            await _settle(lambda: issuer.reads >= 4)  # retried with backoff
            assert [k.kid for k in source.keys_for("old", "RS256")] == ["old"]
            issuer.body = jwks(NEW)
            await _settle(lambda: source.keys_for("new", "RS256"))
        finally:
            loop.cancel()

    asyncio.run(scenario())


def test_the_first_read_must_work() -> None:
    issuer = Issuer()
    issuer.body = None
    with pytest.raises(ConfigError, match=r"cannot read the JWKS at https://idp\.example/jwks"):
        asyncio.run(_source(issuer, [0.0]).start())
    issuer.body = '{"no": "keys"}'
    with pytest.raises(ConfigError, match="keys"):
        asyncio.run(_source(issuer, [0.0]).start())
