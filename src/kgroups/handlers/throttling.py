"""Throttling a client over its quotas, as Kafka does since KIP-219.

A request is served first, then counted: a Produce by its size against
``producer_byte_rate``, a Fetch by its response's size against
``consumer_byte_rate``, and any request by the loop time it took against
``request_percentage`` (a percentage of one loop, as Kafka's is of one
request handler thread; the time spent waiting for a disk or the store does
not count). Over a quota, the answer carries the throttle time and goes out at
once; the connection then reads nothing more from the client until that time
has passed (``Mute``), so a client that ignores the field slows down all the
same. A Fetch over either quota is answered empty instead, its bytes not
counted, as in Kafka.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Generator
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from kio.static.primitive import i32Timedelta

from kgroups.protocol import apis
from kgroups.quotas.entities import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

__all__ = ["LoopTime", "Mute", "loop_time", "throttle", "user_of"]

_T = TypeVar("_T")

# Not counted against request_percentage: the handshake a client needs before
# anything else, and the markers brokers send each other (cluster actions).
_EXEMPT = frozenset(
    {apis.API_VERSIONS, apis.SASL_HANDSHAKE, apis.SASL_AUTHENTICATE, apis.WRITE_TXN_MARKERS}
)


class Mute:
    """Until when (loop time, seconds) a connection reads no request."""

    __slots__ = ("until",)

    def __init__(self) -> None:
        self.until = 0.0

    def add(self, throttle_ms: int, now: float) -> None:
        self.until = max(self.until, now + throttle_ms / 1000)


class LoopTime:
    """Runs a handler, adding up the time each of its steps holds the loop."""

    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds = 0.0

    def run(self, work: Awaitable[_T]) -> Awaitable[_T]:
        return _Timed(work, self)


class _Timed(Awaitable[_T]):
    __slots__ = ("_timer", "_work")

    def __init__(self, work: Awaitable[_T], timer: LoopTime) -> None:
        self._work = work
        self._timer = timer

    def __await__(self) -> Generator[Any, Any, _T]:
        steps = self._work.__await__()
        timer = self._timer
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            started = time.perf_counter()
            try:
                yielded = steps.send(sent) if thrown is None else steps.throw(thrown)
            except StopIteration as done:
                timer.seconds += time.perf_counter() - started
                return done.value  # type: ignore[no-any-return]
            timer.seconds += time.perf_counter() - started
            try:
                sent, thrown = (yield yielded), None
            except BaseException as e:  # handed to the handler, as await would
                sent, thrown = None, e


def user_of(principal: str) -> str:
    """``User:alice`` -> ``alice``: the name user quotas are set on."""
    return principal.partition(":")[2]


def loop_time(broker: BrokerApi, ctx: RequestContext) -> LoopTime | None:
    """A timer for the request, when a request_percentage quota may bound it."""
    if ctx.api_key in _EXEMPT or not broker.quotas.sets(REQUEST_PERCENTAGE):
        return None
    return LoopTime()


def throttle(
    broker: BrokerApi,
    ctx: RequestContext,
    request_size: int,
    response: object | None,
    fetched_bytes: int | None,
    timer: LoopTime | None,
) -> tuple[object | None, int]:
    """Count the request against the client's quotas; the response to send
    (with its throttle time) and the ms to mute the connection for.
    ``fetched_bytes``: the encoded response's size, for a Fetch when
    consumer_byte_rate is set."""
    quotas = broker.quotas
    user, client_id = user_of(ctx.principal), ctx.client_id
    by_bytes = 0
    fetched = 0
    bytes_key = PRODUCER_BYTE_RATE
    if ctx.api_key == apis.PRODUCE and quotas.sets(PRODUCER_BYTE_RATE):
        by_bytes = quotas.record(PRODUCER_BYTE_RATE, user, client_id, request_size)
    elif fetched_bytes is not None:
        bytes_key = CONSUMER_BYTE_RATE
        fetched = fetched_bytes
        by_bytes = quotas.record(CONSUMER_BYTE_RATE, user, client_id, fetched)
    by_time = 0
    # As Kafka: a Produce with acks=0 (no answer) is not counted for its time.
    if timer is not None and not (ctx.api_key == apis.PRODUCE and response is None):
        by_time = quotas.record(REQUEST_PERCENTAGE, user, client_id, timer.seconds * 100)
    ms = max(by_bytes, by_time)
    if not ms:
        return response, 0
    # The quota that throttles longer is the one counted as throttling.
    quotas.throttled(bytes_key if by_bytes > by_time else REQUEST_PERCENTAGE, user, client_id, ms)
    if response is None:
        return None, ms
    wait = i32Timedelta.parse(timedelta(milliseconds=ms))
    if ctx.api_key == apis.FETCH:
        if fetched:
            quotas.unrecord(CONSUMER_BYTE_RATE, user, client_id, fetched)
        return dataclasses.replace(response, responses=(), throttle_time=wait), ms  # type: ignore[type-var]
    if "throttle_time" in getattr(response, "__dataclass_fields__", ()):
        response = dataclasses.replace(response, throttle_time=wait)  # type: ignore[type-var]
    return response, ms
