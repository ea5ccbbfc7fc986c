"""An event loop in a thread of its own, for the blocking editions of the clients.

The blocking Consumer and Producer run their asyncio core on this loop, so that
heartbeats and sends go on while the application is busy between calls. A call
from the application thread submits a coroutine and waits for it.

Callbacks into user code (rebalance hooks, commit callbacks) must run in the
application thread, as in the Java client, where they run inside poll(): a
hook may call back into the client (commit in on_partitions_revoked is the
classic), and user code should never stall the loop. So while the application
thread waits for a call to finish it also serves a queue of such callbacks:
the loop posts one and awaits its outcome, the application thread runs it and
posts the result back. A callback posted while the application is not inside
a call waits for its next call -- like a Java callback waits for the next poll.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")


class _Done:
    __slots__ = ("future",)

    def __init__(self, future: concurrent.futures.Future[Any]) -> None:
        self.future = future


class _Callback:
    __slots__ = ("args", "fn", "outcome")

    def __init__(
        self, fn: Callable[..., Any], args: tuple[Any, ...], outcome: asyncio.Future[Any]
    ) -> None:
        self.fn = fn
        self.args = args
        self.outcome = outcome


class LoopThread:
    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._inbox: queue.SimpleQueue[_Done | _Callback] = queue.SimpleQueue()
        self._finished: set[concurrent.futures.Future[Any]] = set()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @property
    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start a coroutine on the loop without waiting for it."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the loop and wait for it, serving callbacks meanwhile."""
        if self.in_loop_thread:
            coro.close()
            raise RuntimeError("a blocking client call from its own loop would deadlock")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        future.add_done_callback(lambda f: self._inbox.put(_Done(f)))
        while future not in self._finished:
            item = self._inbox.get()
            if isinstance(item, _Done):
                self._finished.add(item.future)
            else:
                self._serve(item)
        self._finished.discard(future)
        return future.result()

    def serve_pending(self) -> None:
        """Run callbacks already posted, without waiting for new ones."""
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Done):
                self._finished.add(item.future)
            else:
                self._serve(item)

    def _serve(self, item: _Callback) -> None:
        try:
            result = item.fn(*item.args)
        except BaseException as e:
            self.loop.call_soon_threadsafe(_settle, item.outcome, None, e)
        else:
            self.loop.call_soon_threadsafe(_settle, item.outcome, result, None)

    async def in_user_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """From the loop: run ``fn`` in the application thread and await its result."""
        outcome: asyncio.Future[T] = self.loop.create_future()
        self._inbox.put(_Callback(fn, args, outcome))
        return await outcome

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


def _settle(outcome: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if outcome.done():
        return
    if error is not None:
        outcome.set_exception(error)
    else:
        outcome.set_result(result)
