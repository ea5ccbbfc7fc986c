"""A kgroups broker on an ephemeral loopback port, in a thread of its own, so
that blocking client libraries can talk to it from the test's thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from kgroups.clock import Clock
from kgroups.server.broker import Broker
from kgroups.server.config import BrokerConfig

T = TypeVar("T")


class BrokerThread:
    def __init__(self, log_dir: Path, clock: Clock | None = None, **overrides: object) -> None:
        props = {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(log_dir),
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "5",
        }
        props.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
        self.config = BrokerConfig(props)
        self.clock = clock
        self.loop = asyncio.new_event_loop()
        self.broker: Broker | None = None
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> BrokerThread:
        self._thread.start()
        self.broker = Broker(self.config, self.clock)
        self.run(self.broker.start())
        return self

    @property
    def bootstrap(self) -> str:
        assert self.broker is not None
        return f"127.0.0.1:{self.broker.port}"

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[[], T]) -> T:
        async def wrapper() -> T:
            return fn()

        return self.run(wrapper())

    def stop(self) -> None:
        if self.broker is not None:
            self.run(self.broker.stop())
            self.broker = None
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
