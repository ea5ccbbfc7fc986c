"""Where the keys that sign OAUTHBEARER tokens come from:
``sasl.oauthbearer.jwks.endpoint.url``, an https:, http: or file: URL.

The set is read when the broker starts (a failure stops it, as in Kafka), then
again every ``sasl.oauthbearer.jwks.endpoint.refresh.ms``; a failed read is
retried after ``...retry.backoff.ms``, doubling up to ``...retry.backoff.max.ms``,
and the keys read last stay in use meanwhile. A token naming a key id the set
lacks (the issuer rotated its keys) asks for an early read, at most once per
``...retry.backoff.max.ms`` so that made-up key ids cannot make the broker
hammer the endpoint; that token itself is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import urllib.parse
import urllib.request
from collections.abc import Callable

from kgroups.config.errors import ConfigError
from kgroups.security.jwks import InvalidJwks, Jwk, parse_jwks

log = logging.getLogger(__name__)

MAX_JWKS_BYTES = 1 << 20
FETCH_TIMEOUT_S = 10.0


def read_jwks(url: str) -> list[Jwk]:
    """The keys at `url` (blocking); OSError or InvalidJwks when they cannot be read."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "file":
        with open(urllib.request.url2pathname(parts.path), "rb") as f:
            body = f.read(MAX_JWKS_BYTES + 1)
    else:
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as response:
            body = response.read(MAX_JWKS_BYTES + 1)
    if len(body) > MAX_JWKS_BYTES:
        raise InvalidJwks(f"larger than {MAX_JWKS_BYTES} bytes")
    return parse_jwks(body)


class JwksSource:
    def __init__(
        self,
        url: str,
        key: str,
        *,
        refresh_ms: int,
        backoff_ms: int,
        backoff_max_ms: int,
        read: Callable[[str], list[Jwk]] = read_jwks,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if urllib.parse.urlsplit(url).scheme not in ("https", "http", "file"):
            raise ConfigError(f"{key} must be an https:, http: or file: URL, not {url!r}")
        self.url = url
        self._key = key
        self._refresh_s = refresh_ms / 1000
        self._backoff_s = backoff_ms / 1000
        self._backoff_max_s = backoff_max_ms / 1000
        self._read = read
        self._monotonic = monotonic
        self._keys: list[Jwk] = []
        self._early: asyncio.Event | None = None
        self._last_early = -float("inf")

    async def start(self) -> None:
        """The first read; ConfigError when it fails."""
        try:
            self._keys = await asyncio.to_thread(self._read, self.url)
        except (OSError, InvalidJwks) as e:
            raise ConfigError(f"{self._key}: cannot read the JWKS at {self.url}: {e}") from None
        log.info("read %d signature key(s) from the JWKS at %s", len(self._keys), self.url)

    async def refresh_loop(self) -> None:
        """Read the set again, periodically and when asked; runs until cancelled."""
        self._early = asyncio.Event()
        while True:
            timeout = self._refresh_s if self._refresh_s > 0 else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._early.wait(), timeout)
            self._early.clear()
            await self._read_until_it_works()

    async def _read_until_it_works(self) -> None:
        wait = self._backoff_s
        while True:
            try:
                self._keys = await asyncio.to_thread(self._read, self.url)
                return
            except (OSError, InvalidJwks) as e:
                log.warning("cannot read the JWKS at %s (retrying in %.1fs): %s", self.url, wait, e)
            await asyncio.sleep(wait)
            wait = min(max(wait * 2, 0.001), self._backoff_max_s)

    def keys_for(self, kid: str | None, alg: str) -> list[Jwk]:
        """The keys that may have signed a token with this header."""
        fitting = [k for k in self._keys if k.fits(alg)]
        if kid is None:
            return fitting
        named = [k for k in fitting if k.kid == kid]
        if not named:
            self._ask_early()
        return named

    def _ask_early(self) -> None:
        now = self._monotonic()
        if self._early is not None and now - self._last_early >= self._backoff_max_s:
            self._last_early = now
            self._early.set()
