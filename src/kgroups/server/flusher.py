"""Group commit for fsync: logs that need flushing are fsynced together.

Appends go to the operating system at once (that is what makes an
acknowledged write survive kill -9); fsync, which makes it survive a power
loss, follows the flush policy. Logs due for a flush are collected while the
previous flush runs in a worker thread, then fsynced in one batch, so many
appends share one round of fsync calls and the event loop never blocks on disk.
"""

from __future__ import annotations

import asyncio
import logging

from kgroups.storage.log import PartitionLog

log = logging.getLogger(__name__)


class Flusher:
    def __init__(self) -> None:
        self._dirty: dict[int, PartitionLog] = {}
        self._waiting: list[asyncio.Future[None]] = []
        self._task: asyncio.Task[None] | None = None

    def request(self, plog: PartitionLog) -> asyncio.Future[None]:
        """Schedule an fsync of `plog`; the future completes once it is done."""
        self._dirty[id(plog)] = plog
        done = asyncio.get_running_loop().create_future()
        self._waiting.append(done)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return done

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._dirty:
            batch, self._dirty = list(self._dirty.values()), {}
            waiting, self._waiting = self._waiting, []
            error: BaseException | None = None
            # Logs are fsynced side by side: the disk overlaps them.
            results = await asyncio.gather(
                *(loop.run_in_executor(None, plog.flush) for plog in batch),
                return_exceptions=True,
            )
            for result in results:
                if isinstance(result, BaseException):
                    log.error("fsync failed: %s", result)
                    error = result
            for fut in waiting:
                if not fut.done():
                    if error is None:
                        fut.set_result(None)
                    else:
                        fut.set_exception(error)

    async def close(self) -> None:
        if self._task is not None:
            await self._task
