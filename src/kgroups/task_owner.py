"""The owner of a component's background tasks, like an ``asyncio.TaskGroup`` that
does not need one enclosing ``async with``: the client's group coordinator starts
tasks from many calls (poll, a heartbeat timer), the broker's coordinator runtime
one per partition it loads, and each ends them all when it closes.

Every task started here is kept until it ends, so nothing is lost to the event
loop's "exception never retrieved". With ``keep_failures`` a task's error is
kept until ``raise_failure()`` raises it (the client does so from poll()), and
``close()`` logs a failure nobody raised; without, it is logged at once.
``close()`` cancels and awaits every task still running.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["TaskOwner"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class TaskOwner:
    def __init__(self, name: str, *, keep_failures: bool = True) -> None:
        self.name = name
        self._keep_failures = keep_failures
        self._tasks: set[asyncio.Task[Any]] = set()
        self._failures: list[BaseException] = []
        self._closed = False

    def start(self, coro: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        if self._closed:
            coro.close()
            raise RuntimeError(f"{self.name} is closed")
        task = asyncio.get_running_loop().create_task(coro, name=f"{self.name}: {name}")
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        error = None if task.cancelled() else task.exception()
        if error is None:
            return
        if self._keep_failures:
            self._failures.append(error)
        else:
            log.error("%s: a background task failed", self.name, exc_info=error)

    def raise_failure(self) -> None:
        """Raise the error of the earliest task that failed since the last call."""
        if self._failures:
            error = self._failures.pop(0)
            raise error

    async def close(self) -> None:
        """Cancel every task and wait until each has ended."""
        self._closed = True
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for error in self._failures:
            log.error("%s: a background task failed", self.name, exc_info=error)
        self._failures.clear()
