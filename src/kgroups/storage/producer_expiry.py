"""Forgetting idle idempotent producers (Kafka's ``producer.id.expiration.ms``).

Every ``producer.id.expiration.check.interval.ms`` each partition drops the
producers whose last batch is older than ``producer.id.expiration.ms``, so a
client that takes a fresh producer id for every request cannot grow the
broker's memory without bound. A partition that dropped some writes a snapshot
of what is left, so a restart does not bring them back from an older one: the
bytes are taken on the loop (they describe the log at its end offset of that
moment), the file is written on a worker thread. The loop gets a turn between
partitions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from kgroups.storage.log import SegmentLog
from kgroups.storage.log_manager import LogManager
from kgroups.storage.producer_snapshots import write_snapshot_file

__all__ = ["expire_idle_producers"]

log = logging.getLogger(__name__)


async def expire_idle_producers(logs: LogManager, now_ms: int, expiration_ms: int) -> int:
    """One pass over every partition; returns the number of producers dropped."""
    total = 0
    for _topic, _partition, partition_log in logs.logs():
        if partition_log.closed:
            continue
        expired = partition_log.producers.expire(now_ms, expiration_ms)
        if expired:
            total += expired
            await _write_snapshot(partition_log)
        await asyncio.sleep(0)
    return total


async def _write_snapshot(partition_log: SegmentLog) -> None:
    offset = partition_log.log_end_offset
    layout = partition_log.layout_version
    snapshot = partition_log.producers.to_snapshot()
    try:
        path = await asyncio.to_thread(
            write_snapshot_file, partition_log.directory, offset, snapshot
        )
    except OSError as exc:  # deleted meanwhile, or a disk problem: the log has the state too
        log.warning("cannot write producer snapshot in %s: %s", partition_log.directory, exc)
        return
    if partition_log.closed or partition_log.layout_version != layout:
        # Truncated or rewritten meanwhile: the snapshot may describe offsets
        # the log no longer has.
        with contextlib.suppress(OSError):
            path.unlink()
