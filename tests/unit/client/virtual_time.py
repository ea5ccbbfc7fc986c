"""An event loop on virtual time, for tests of timers (heartbeats, session and poll
timeouts) that should neither sleep for real nor depend on the machine's speed.

The loop's clock stands still while anything is ready to run; when every task
waits, it jumps straight to the next timer. So ``await asyncio.sleep(5)`` returns
at once with ``loop.time()`` 5 seconds later, and a test's outcome depends only
on the order of events. It does no real IO wait: a test that waits on nothing
but IO (or another thread) fails at once instead of hanging.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Awaitable, Callable
from typing import Any


class _VirtualSelector:
    """Polls the real selector without blocking; a wait becomes a clock jump."""

    def __init__(self, real: selectors.BaseSelector, loop: VirtualTimeLoop) -> None:
        self._real = real
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[Any]:
        events = self._real.select(0)
        if events or timeout == 0:
            return events
        if timeout is None:
            raise RuntimeError("every task waits and no timer is set: the test would hang")
        self._loop.advance(timeout)
        return events

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        super().__init__()
        self._now = 0.0
        self._selector = _VirtualSelector(self._selector, self)  # type: ignore[has-type]

    def time(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds


def run_virtual(scenario: Callable[[], Awaitable[None]], timeout: float = 60.0) -> None:
    """Run ``scenario`` on virtual time; ``timeout`` is virtual seconds too."""

    async def bounded() -> None:
        await asyncio.wait_for(scenario(), timeout)

    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        runner.run(bounded())
