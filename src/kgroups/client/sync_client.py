"""The synchronous face of an async client (Consumer, Producer): the async core
lives on a loop thread of its own; each call runs there and waits.

Made with a coroutine that builds the core on that loop; closing runs the
core's close there, then the callbacks it posted to the application thread
(a consumer's revocation), and stops the thread. ``with`` closes it.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Generic, Self, TypeVar

from kgroups.client.loop_thread import LoopThread

__all__ = ["SyncClient"]

C = TypeVar("C")


class SyncClient(Generic[C]):
    def __init__(self, thread_name: str, create: Callable[[], Coroutine[Any, Any, C]]) -> None:
        self._thread = LoopThread(thread_name)
        try:
            self._core: C = self._thread.call(create())
        except BaseException:
            self._thread.stop()
            raise
        self._closed = False

    def _close(self, close_core: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``close_core()`` on the loop once, then stop the thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._thread.call(close_core())
            self._thread.serve_pending()
        finally:
            self._thread.stop()

    def close(self) -> None:
        raise NotImplementedError  # each client closes with its own timeout

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
