"""The local home's background work: flushes by time, recovery-point
checkpoints, retention, compaction and forgetting idle producers.

Each is a loop the broker runs as a task and cancels at stop. The heavy parts
(cleaning, deleting files, checkpoints, snapshots) run on worker threads;
only what changes a log's state happens on the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from kgroups.clock import Clock
from kgroups.config.broker_config import BrokerConfig
from kgroups.errors import KafkaError
from kgroups.storage.cleaner import LogCleaner
from kgroups.storage.flusher import Flusher
from kgroups.storage.log_manager import LogManager
from kgroups.storage.producer_expiry import expire_idle_producers

__all__ = ["local_maintenance"]

log = logging.getLogger(__name__)


def local_maintenance(
    config: BrokerConfig, logs: LogManager, flusher: Flusher, clock: Clock
) -> list[Coroutine[Any, Any, None]]:
    """The loops a broker alone runs over its log directory."""
    loops = [
        _flush_loop(config, logs, flusher, clock),
        _checkpoint_loop(config, logs),
        _retention_loop(config, logs, clock),
        _producer_expiry_loop(config, logs, clock),
    ]
    if config.get_bool("log.cleaner.enable"):
        loops.append(_cleaner_loop(config, logs, clock))
    return loops


async def _flush_loop(
    config: BrokerConfig, logs: LogManager, flusher: Flusher, clock: Clock
) -> None:
    """Time-based flush policy (`log.flush.interval.ms`)."""
    interval_ms = min(config.log_flush_interval_ms, 1000)
    while True:
        await asyncio.sleep(interval_ms / 1000)
        for plog in logs.flush_due(clock.now_ms()):
            flusher.schedule(plog)


async def _checkpoint_loop(config: BrokerConfig, logs: LogManager) -> None:
    """Checkpoint the logs' recovery points (off the loop), so that recovery
    after a crash checks only what was appended since its log's last fsync."""
    loop = asyncio.get_running_loop()
    interval = config.get_int("log.flush.offset.checkpoint.interval.ms") / 1000
    written: dict[tuple[str, int], int] = {}
    while True:
        await asyncio.sleep(interval)
        points = logs.recovery_points()
        if points == written:
            continue
        try:
            await loop.run_in_executor(None, logs.write_recovery_points, points)
        except OSError as e:
            log.error("cannot checkpoint recovery points: %s", e)
            continue
        written = points


async def _retention_loop(config: BrokerConfig, logs: LogManager, clock: Clock) -> None:
    interval = config.get_int("log.retention.check.interval.ms") / 1000
    while True:
        await asyncio.sleep(interval)
        deleted = logs.apply_retention(clock.now_ms())
        if deleted:
            log.info("retention deleted %d segment(s)", deleted)
            retired = logs.take_retired_files()
            await asyncio.to_thread(logs.remove_retired_files, retired)


async def _cleaner_loop(config: BrokerConfig, logs: LogManager, clock: Clock) -> None:
    """Compact the closed segments of compacted topics, off the event loop.

    The heavy passes run in a worker thread over immutable segments; only
    the swap of the segment list happens here, on the loop (see
    storage/cleaner.py). Cancelling this task on shutdown waits for a clean
    in flight, whose commit then finds the log closed and discards it.
    """
    backoff = config.get_int("log.cleaner.backoff.ms") / 1000
    loop = asyncio.get_running_loop()
    cleaner = LogCleaner()
    while True:
        for plan in logs.cleanable_logs(clock.now_ms()):
            try:
                result = await asyncio.shield(loop.run_in_executor(None, cleaner.clean, plan))
            except (OSError, KafkaError, RuntimeError) as e:
                log.warning("log cleaning skipped a partition: %s", e)
                continue
            if result.commit():
                await loop.run_in_executor(None, result.remove_replaced_files)
        await asyncio.sleep(backoff)


async def _producer_expiry_loop(config: BrokerConfig, logs: LogManager, clock: Clock) -> None:
    interval_s = config.get_int("producer.id.expiration.check.interval.ms") / 1000
    expiration_ms = config.get_int("producer.id.expiration.ms")
    while True:
        await asyncio.sleep(interval_s)
        expired = await expire_idle_producers(logs, clock.now_ms(), expiration_ms)
        if expired:
            log.info("forgot %d idle producer id(s)", expired)
