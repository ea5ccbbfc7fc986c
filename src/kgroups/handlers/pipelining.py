"""Produce requests of one connection pipelined behind their durability wait.

A connection handles one request at a time (network/connection.py). A Produce
that waits for its appends to be durable (an fsync by the flush policy, a
commit to the cluster store) would then hold back the client's next Produce,
so each got a commit of its own; librdkafka sends one partition per Produce
request, so a producer of six partitions had six commits in a row. Instead a
Produce handler calls ``release()`` once its batches are appended (offsets
assigned, in request order) and only the wait for durability is left: the
connection then handles the next Produce, whose appends join the same commit.
Answers still go out in request order, and any other request waits until the
Produce requests before it are answered, as without pipelining.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_RELEASE: ContextVar[asyncio.Future[None] | None] = ContextVar("release", default=None)


def release() -> None:
    """The request's order-sensitive work is done: the connection may go on."""
    released = _RELEASE.get()
    if released is not None and not released.done():
        released.set_result(None)


def start(coro: Coroutine[Any, Any, T]) -> tuple[asyncio.Task[T], asyncio.Future[None]]:
    """Run ``coro`` as a task; the future completes at its ``release()`` or its end."""
    loop = asyncio.get_running_loop()
    released: asyncio.Future[None] = loop.create_future()
    token = _RELEASE.set(released)
    try:
        task = loop.create_task(coro)  # copies the context, so sees ``released``
    finally:
        _RELEASE.reset(token)

    def ended(_task: asyncio.Task[T]) -> None:
        if not released.done():
            released.set_result(None)

    task.add_done_callback(ended)
    return task, released
