"""The futures send() returns: one per record, settled when its batch is.

A batch's outcome (base offset, or error) is shared by the futures of all its
records, so a send costs one small object rather than a full future with a lock
and a condition (the Java client's FutureRecordMetadata over one
ProduceRequestResult per batch). A delivery future can be waited on from any
thread (``result()``) and awaited from any event loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from kgroups.client.record_metadata import RecordMetadata

__all__ = ["BatchOutcome", "DeliveryFuture"]


class BatchOutcome:
    __slots__ = (
        "_callbacks",
        "_done",
        "_event",
        "_lock",
        "_waiters",
        "base_offset",
        "error",
        "log_append_time",
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = False
        self._event: threading.Event | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self._callbacks: list[Callable[[], None]] = []
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self._done

    def complete(
        self, base_offset: int, log_append_time: int = -1, error: BaseException | None = None
    ) -> None:
        with self._lock:
            if self._done:
                return
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self.error = error
            self._done = True
            event, waiters, callbacks = self._event, self._waiters, self._callbacks
            self._waiters, self._callbacks = [], []
        if event is not None:
            event.set()
        for waiter in waiters:
            loop = waiter.get_loop()
            if not loop.is_closed():
                loop.call_soon_threadsafe(_wake, waiter)
        for callback in callbacks:
            callback()

    def wait(self, timeout: float | None) -> bool:
        with self._lock:
            if self._done:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    async def wait_async(self) -> None:
        with self._lock:
            if self._done:
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        await waiter

    def on_done(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback()


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


@dataclass(slots=True, eq=False, repr=False)
class DeliveryFuture:
    _outcome: BatchOutcome
    _index: int
    """The record's place in its batch: its offset is the batch's base offset plus this."""
    topic: str
    partition: int
    _timestamp: int
    _key_size: int
    _value_size: int

    def done(self) -> bool:
        return self._outcome.done

    def _metadata(self) -> RecordMetadata:
        outcome = self._outcome
        if outcome.error is not None:
            raise outcome.error
        offset = outcome.base_offset + self._index if outcome.base_offset >= 0 else -1
        timestamp = outcome.log_append_time if outcome.log_append_time >= 0 else self._timestamp
        return RecordMetadata(
            self.topic, self.partition, offset, timestamp, self._key_size, self._value_size
        )

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """Wait for delivery; raises the send's error, or TimeoutError."""
        if not self._outcome.wait(timeout):
            raise TimeoutError("the record was not delivered in time")
        return self._metadata()

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self._outcome.wait(timeout):
            raise TimeoutError("the record was not delivered in time")
        return self._outcome.error

    def add_done_callback(self, callback: Callable[[DeliveryFuture], Any]) -> None:
        """``callback(future)`` once delivered or failed, on the client's I/O loop:
        keep it short."""
        self._outcome.on_done(lambda: callback(self))

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        yield from self._outcome.wait_async().__await__()
        return self._metadata()
