"""The broker compacts `__consumer_offsets`: many commits shrink to the live keys,
and a restart loads the latest offsets."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from kgroups.client.admin import Admin
from kgroups.records.batch import iter_batches, iter_key_values
from kgroups.topics.placement import OFFSETS_TOPIC, partition_for_group

from broker_thread import BrokerThread


def test_offsets_topic_compacts_and_reloads(tmp_path: Path) -> None:
    data = tmp_path / "data"
    overrides = {
        "offsets_topic_segment_bytes": 64 * 1024,
        "log_cleaner_backoff_ms": 100,
        "auto_create_topics_enable": "true",
    }
    broker = BrokerThread(data, **overrides).start()
    try:
        assert broker.broker is not None
        broker.call(lambda: broker.broker.create_topic("t", 10, {}))  # type: ignore[union-attr]

        async def commit_many() -> None:
            admin = Admin(broker.bootstrap)
            try:
                for i in range(2000):
                    await admin.commit("g", {("t", p): i * 10 + p for p in range(10)})
            finally:
                await admin.close()

        broker.run(commit_many(), timeout=120)
        plog_partition = partition_for_group("g", 5)

        def live_records() -> int:
            assert broker.broker is not None
            plog = broker.broker.partitions.log(OFFSETS_TOPIC, plog_partition)
            chunk = plog.read(plog.log_start_offset, 1 << 30)
            return sum(len(iter_key_values(chunk[p : p + h.size])) for p, h in iter_batches(chunk))

        written = 2000 * 10
        deadline = time.time() + 30
        while live_records() > written // 4 and time.time() < deadline:
            time.sleep(0.2)
        remaining = live_records()
        # The closed segments collapsed to their live keys; the active one is left alone.
        assert remaining <= written // 4, remaining
    finally:
        broker.stop()

    broker = BrokerThread(data, **overrides).start()
    try:

        async def committed() -> dict[tuple[str, int], int]:
            admin = Admin(broker.bootstrap)
            try:
                for _ in range(100):
                    try:
                        return await admin.committed("g")
                    except Exception:
                        await asyncio.sleep(0.05)
                return await admin.committed("g")
            finally:
                await admin.close()

        assert broker.run(committed()) == {("t", p): 19990 + p for p in range(10)}
    finally:
        broker.stop()
