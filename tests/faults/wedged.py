"""A watchdog for librdkafka's main thread, which can deadlock (see
liveness.py): the main thread emits the client's statistics on a timer and
the application's polls deliver them, so a consumer polled for WEDGED_S
without any statistics has a main thread that is stuck for good. It fetches
nothing more and closing it would block for ever: the workload records
`wedged`, leaves the old client to a thread of its own, and goes on with a
new one, as an application's supervisor would."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

STATS_MS = 1000
WEDGED_S = 15.0


class MainThreadWatch:
    def __init__(self) -> None:
        self.last = time.monotonic()

    def config(self) -> dict[str, Any]:
        return {"statistics.interval.ms": STATS_MS, "stats_cb": self._beat}

    def _beat(self, _stats: str) -> None:
        self.last = time.monotonic()

    def wedged(self, drained: bool) -> bool:
        """Asked right after a poll. Only a poll that emptied the client's
        queue (returned fewer records than it could) has delivered every
        statistics event queued behind records; the main thread emits one a
        second, so then none for WEDGED_S means it is stuck."""
        return drained and time.monotonic() - self.last > WEDGED_S


def close_aside(client: Any) -> None:
    """Close a wedged client on a daemon thread that keeps it: its close (or
    its destruction, were it collected) blocks for ever."""

    def close() -> None:
        with contextlib.suppress(Exception):
            client.close()
        threading.Event().wait()  # still referenced: never collected

    threading.Thread(target=close, name="wedged client", daemon=True).start()
