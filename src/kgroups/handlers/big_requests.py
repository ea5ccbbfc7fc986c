"""Big requests (1 MiB and more) are parsed and answered off the event loop.

An 18 MB OffsetCommit is millions of small Python objects: parsing it, or
encoding its answer, is seconds of pure Python, so both run on a worker thread
(the request and response entities are immutable: nothing is shared that
changes). Produce requests are left out: their bulk is record bytes, which
are not parsed into objects, and they are the hot path.

While such an object graph is alive, every full pass of Python's cyclic garbage
collector would walk all of it with every thread stopped (over a second for an
18 MB request). So the collector is paused while the request is parsed, and the
parsed objects are then moved out of its sight (``gc.freeze``) until the
request is answered; they form no cycles, reference counting frees them.
Objects made meanwhile are collected as usual.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["BIG_REQUEST_BYTES", "big_request", "parse_off_loop"]

BIG_REQUEST_BYTES = 1 << 20

T = TypeVar("T")

_in_flight = 0
_parsing = 0
_collector_was_enabled = True


@contextmanager
def big_request() -> Iterator[None]:
    """Around the handling of a big request (on the loop): when the last one
    in flight is answered, the frozen objects are handed back to the collector."""
    global _in_flight
    _in_flight += 1
    try:
        yield
    finally:
        _in_flight -= 1
        if _in_flight == 0:
            gc.unfreeze()


async def parse_off_loop(parse: Callable[[], T]) -> T:
    """Run ``parse`` on a worker thread with the collector paused, then freeze
    what it made (inside ``big_request``)."""
    global _parsing, _collector_was_enabled
    if _parsing == 0:
        _collector_was_enabled = gc.isenabled()
        gc.disable()
    _parsing += 1
    try:
        return await asyncio.to_thread(parse)
    finally:
        _parsing -= 1
        if _parsing == 0:
            gc.freeze()
            if _collector_was_enabled:
                gc.enable()
