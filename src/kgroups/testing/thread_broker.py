"""A kgroups broker on its own event loop in a thread of its own, so that
blocking client libraries (and other event loops) can talk to it from the
caller's thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

from kgroups.clock import Clock
from kgroups.config.broker_config import BrokerConfig
from kgroups.errors import KafkaError
from kgroups.server.broker import Broker
from kgroups.server.fault_admin import apply_fault, refusal
from kgroups.testing.defaults import broker_properties
from kgroups.testing.faults import FaultRefused

T = TypeVar("T")


class ThreadBroker:
    def __init__(
        self,
        log_dir: Path,
        overrides: Mapping[str, str] | None = None,
        clock: Clock | None = None,
        port: int = 0,
        loop_factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop,
    ) -> None:
        """``loop_factory``: the event loop to run on (``uvloop.new_event_loop``
        for the loop `kgroups serve` runs on)."""
        self.log_dir = log_dir
        self.overrides = dict(overrides or {})
        self.config = BrokerConfig(broker_properties(log_dir, port, self.overrides))
        self.clock = clock
        self.broker: Broker | None = None
        self.loop = loop_factory()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="kgroups-broker", daemon=True
        )

    def start(self) -> ThreadBroker:
        if not self._thread.is_alive():
            self._thread.start()
        self.broker = Broker(self.config, self.clock)
        self.run(self.broker.start())
        return self

    @property
    def port(self) -> int:
        assert self.broker is not None, "broker not started"
        return self.broker.port

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        """Run `coro` on the broker's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[[], T]) -> T:
        """Call `fn` on the broker's loop (its state is only safe to touch there)."""

        async def wrapper() -> T:
            return fn()

        return self.run(wrapper())

    @property
    def fault_admin_url(self) -> str | None:
        admin = None if self.broker is None else self.broker.fault_admin
        return None if admin is None else f"http://127.0.0.1:{admin.port}"

    def run_fault(self, action: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run a fault action (server/fault_admin.py) on the broker's loop."""

        def act() -> dict[str, Any]:
            assert self.broker is not None, "broker not started"
            if not action:
                return self.broker.faults.describe()
            try:
                return apply_fault(self.broker, action, args)
            except (ValueError, KafkaError) as e:
                raise FaultRefused(refusal(e)) from None

        return self.call(act)

    def restart(self) -> ThreadBroker:
        """Stop the broker cleanly and start it again on the same port and data."""
        port = self.port
        self.run(self._stop_broker())
        self.config = BrokerConfig(broker_properties(self.log_dir, port, self.overrides))
        return self.start()

    async def _stop_broker(self) -> None:
        if self.broker is not None:
            await self.broker.stop()
            self.broker = None

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        if self._thread.is_alive():
            self.run(self._stop_broker())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
        self.loop.close()
