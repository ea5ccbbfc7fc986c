"""kill -9 of the broker at random moments while groups commit offsets: every
acknowledged commit is returned by OffsetFetch after the restart, and no group
is lost."""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import pytest

from kgroups.client.admin import Admin
from kgroups.errors import KafkaError

from process_broker import BrokerProcess

pytestmark = pytest.mark.interop

ROUNDS = int(os.environ.get("KGROUPS_CRASH_ROUNDS", "10"))
GROUPS = [f"g{i}" for i in range(4)]
PARTITIONS = 4


async def _commit_until_killed(
    broker: BrokerProcess, acked: dict[tuple[str, int], int], kill_after: float
) -> None:
    """Commit increasing offsets from several groups; SIGKILL the broker mid-way."""
    admin = Admin(broker.bootstrap)
    loop = asyncio.get_running_loop()
    killer = loop.call_later(kill_after, broker.kill)

    async def committer(group: str) -> None:
        while True:
            partition = random.randrange(PARTITIONS)
            offset = acked.get((group, partition), 0) + random.randint(1, 50)
            try:
                await admin.commit(group, {("t", partition): offset})
            except (KafkaError, ConnectionError, OSError):
                return
            acked[(group, partition)] = offset

    try:
        await asyncio.wait_for(
            asyncio.gather(*(committer(g) for g in GROUPS), return_exceptions=True), 30
        )
    finally:
        killer.cancel()
        await admin.close()


async def _committed(bootstrap: str) -> dict[tuple[str, int], int]:
    admin = Admin(bootstrap)
    try:
        out = {}
        for group in GROUPS:
            for (_topic, partition), offset in (await admin.committed(group)).items():
                out[(group, partition)] = offset
        return out
    finally:
        await admin.close()


async def _await_loaded(bootstrap: str) -> dict[tuple[str, int], int]:
    for _ in range(100):
        try:
            return await _committed(bootstrap)
        except KafkaError:  # COORDINATOR_LOAD_IN_PROGRESS right after start
            await asyncio.sleep(0.1)
    return await _committed(bootstrap)


def test_acknowledged_commits_survive_sigkill(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    random.seed(7)
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("t", PARTITIONS, 1)])["t"].result(20)
        acked: dict[tuple[str, int], int] = {}
        for round_ in range(ROUNDS):
            asyncio.run(_commit_until_killed(broker, acked, random.uniform(0.05, 0.4)))
            broker.start()
            committed = asyncio.run(_await_loaded(broker.bootstrap))
            for key, offset in acked.items():
                # A commit in flight at the kill may have landed too: never less.
                assert committed.get(key, -1) >= offset, (round_, key, offset, committed.get(key))
            acked.update(committed)
        assert len(acked) > len(GROUPS)
    finally:
        broker.stop()
