"""`kgroups serve`: run a broker until SIGTERM or SIGINT, then stop cleanly."""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from kgroups.config.broker_config import BrokerConfig
from kgroups.extras import require

if TYPE_CHECKING:
    from kgroups.testing.parent_watch import ParentWatch

log = logging.getLogger("kgroups")

# Cycle collection at 20,000 net new container objects instead of CPython's 700:
# with 64 requests in flight the broker passes 700 in every burst, and the
# young-generation passes then cost a quarter of a busy broker's CPU (measured
# on durable commits). Cycles are still collected, in fewer, larger passes.
_GC_THRESHOLDS = (20_000, 20, 50)


def run(
    config_file: Path | None,
    overrides: list[str],
    parent_pipe: int | None = None,
    remove_on_parent_exit: Path | None = None,
) -> int:
    """``parent_pipe``: stop when this descriptor reads EOF (the process that
    holds its write end is gone), then remove ``remove_on_parent_exit``
    (kgroups.testing.parent_watch)."""
    config = BrokerConfig.load(config_file, overrides)
    if config.get_str("cluster.store.url"):
        require("psycopg", "cluster mode (cluster.store.url)")
    gc.set_threshold(*_GC_THRESHOLDS)
    for key in config.ignored:
        log.info("configuration key %s has no effect on a single kgroups broker", key)
    watch = None
    if parent_pipe is not None:
        from kgroups.testing.parent_watch import ParentWatch

        watch = ParentWatch(parent_pipe, remove_on_parent_exit)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        asyncio.run(_serve(config, watch))
    else:
        uvloop.run(_serve(config, watch))
    if watch is not None:
        watch.finish()
    return 0


async def _serve(config: BrokerConfig, watch: ParentWatch | None = None) -> None:
    # Imported once the configuration has passed the extras check above, so a
    # missing extra is reported as such, not as an import error from within.
    from kgroups.handlers import load_all
    from kgroups.server.broker import Broker

    # Every API's handler now, not at its first request on the event loop; and
    # what a broker otherwise imports on first use: the coordinators' shards
    # and the metrics page.
    load_all()
    for module in ("kgroups.transactions.shard", "kgroups.server.metrics_endpoint"):
        importlib.import_module(module)

    broker = Broker(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if watch is not None:
        watch.start(lambda: loop.call_soon_threadsafe(stop.set), loop.add_signal_handler)
    await broker.start()
    await stop.wait()
    log.info("shutting down")
    await broker.stop()
