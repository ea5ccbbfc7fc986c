"""One cluster store connection on a thread of its own.

A store call blocks on the network and the database, so it never runs on the
event loop; each caller (lease and metadata, commits, reads) gets its own
connection on its own thread, and sends it many requests per call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from kgroups.postgres_store.store import Store

T = TypeVar("T")


class StoreThread:
    def __init__(self, url: str, name: str) -> None:
        self._url = url
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._store: Store | None = None

    def _call(self, work: Callable[[Store], T]) -> T:
        if self._store is None:
            self._store = Store.connect(self._url)
        return work(self._store)

    async def run(self, work: Callable[[Store], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._call, work)

    def run_blocking(self, work: Callable[[Store], T]) -> T:
        """For the rare synchronous callers on the loop (creating __consumer_offsets)."""
        return self._executor.submit(self._call, work).result()

    def close(self) -> None:
        def close() -> None:
            if self._store is not None:
                self._store.close()

        self._executor.submit(close)
        self._executor.shutdown(wait=True)
