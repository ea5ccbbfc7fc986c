"""Group coordinators in cluster mode: each group is coordinated by the leader
of its `__consumer_offsets` partition, and when that broker is killed another
broker takes the partition over, loads its groups from the store, and serves
the offsets acknowledged before the kill."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from cluster_brokers import SESSION_MS, create_topic, running_cluster

from kgroups.cli import main
from kgroups.client.admin import Admin
from kgroups.errors import ErrorCode, KafkaError

GROUP = "moved"


def _retry(bootstrap: str, what: str, step: object, timeout: float) -> object:
    """``step(admin)`` until it succeeds: the coordinator may be moving."""

    async def attempt() -> object:
        admin = Admin(bootstrap)
        try:
            return await step(admin)  # type: ignore[operator]
        finally:
            await admin.close()

    deadline = time.monotonic() + timeout
    while True:
        try:
            return asyncio.run(attempt())
        except (KafkaError, OSError) as e:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: {e}") from e
            time.sleep(0.2)


def test_killing_a_groups_coordinator_moves_it_and_keeps_its_offsets(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_cluster(tmp_path, store_url, 2) as brokers:
        bootstrap = ",".join(b.bootstrap for b in brokers)
        assert create_topic(brokers[0].port, "t", 1) == ErrorCode.none

        async def commit(admin: Admin) -> None:
            await admin.commit(GROUP, {("t", 0): 7})

        async def coordinator(admin: Admin) -> int:
            found = (await admin.find_coordinators([GROUP]))[GROUP]
            if isinstance(found, KafkaError):
                raise found
            return found[0]

        _retry(bootstrap, "first commit", commit, 20)
        victim = _retry(bootstrap, "coordinator", coordinator, 10)
        survivor = next(b for i, b in enumerate(brokers, 1) if i != victim)
        # The CLI sees both brokers, the offsets partitions' leaders, and the coordinator.
        assert (
            main(["cluster", "describe", "--output", "json", "--bootstrap-server", bootstrap]) == 0
        )
        described = json.loads(capsys.readouterr().out)
        assert [b["broker_id"] for b in described["brokers"]] == [1, 2]
        offsets = [p for p in described["partitions"] if p["topic"] == "__consumer_offsets"]
        assert offsets and {p["leader"] for p in offsets} <= {1, 2}
        assert [(g["group"], g["coordinator"]["broker_id"]) for g in described["groups"]] == [
            (GROUP, victim)
        ]
        brokers[victim - 1].kill()  # type: ignore[operator]

        async def committed(admin: Admin) -> dict[tuple[str, int], int]:
            return await admin.committed(GROUP)

        timeout = SESSION_MS / 1000 + 15
        assert _retry(survivor.bootstrap, "offsets after the kill", committed, timeout) == {
            ("t", 0): 7
        }
        assert _retry(survivor.bootstrap, "new coordinator", coordinator, 10) != victim
