"""Group commit for fsync: logs that need flushing are fsynced together.

Appends go to the operating system at once (that is what makes an
acknowledged write survive kill -9); fsync, which makes it survive a power
loss, follows the flush policy. Logs due for a flush are collected while the
previous flush runs in a worker thread, then fsynced in one batch, so many
appends share one round of fsync calls and the event loop never blocks on disk.
Each waiter learns the outcome of its own log's fsync: a failure (which takes
that log offline) fails only the requests waiting for that log.
"""

from __future__ import annotations

import asyncio
import logging

from kgroups.storage.log import SegmentLog

log = logging.getLogger(__name__)


class Flusher:
    def __init__(self) -> None:
        self._due: dict[int, tuple[SegmentLog, list[asyncio.Future[None]]]] = {}
        self._task: asyncio.Task[None] | None = None

    def request(self, plog: SegmentLog) -> asyncio.Future[None]:
        """Schedule an fsync of `plog`; the future completes once it is done
        (with the flush's KafkaError if it failed)."""
        done = asyncio.get_running_loop().create_future()
        self._entry(plog).append(done)
        return done

    def schedule(self, plog: SegmentLog) -> None:
        """Schedule an fsync of `plog` that nobody waits for (time-based policy)."""
        self._entry(plog)

    def _entry(self, plog: SegmentLog) -> list[asyncio.Future[None]]:
        entry = self._due.get(id(plog))
        if entry is None:
            entry = self._due[id(plog)] = (plog, [])
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return entry[1]

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._due:
            due, self._due = list(self._due.values()), {}
            # Logs are fsynced side by side: the disk overlaps them.
            results = await asyncio.gather(
                *(loop.run_in_executor(None, plog.flush) for plog, _waiting in due),
                return_exceptions=True,
            )
            for (plog, waiting), result in zip(due, results, strict=True):
                if isinstance(result, BaseException):
                    log.error("fsync of %s failed: %s", plog.directory.name, result)
                for fut in waiting:
                    if fut.done():
                        continue
                    if isinstance(result, BaseException):
                        fut.set_exception(result)
                    else:
                        fut.set_result(None)

    async def close(self) -> None:
        if self._task is not None:
            await self._task
