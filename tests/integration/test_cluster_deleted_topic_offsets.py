"""A topic deleted in a cluster takes its committed offsets with it on every
coordinator: the deleting broker's groups at once, the other brokers' groups
when their next read of the cluster shows the topic gone. A topic created
again under the same name starts with no offsets in any group."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from cluster_brokers import HEARTBEAT_MS, create_topic, running_cluster

from kgroups.cli import main
from kgroups.client.admin import Admin
from kgroups.errors import ErrorCode, KafkaError

GROUPS = [f"g{i}" for i in range(8)]


def _coordinators(bootstrap: str) -> dict[str, int]:
    async def find() -> dict[str, int]:
        admin = Admin(bootstrap)
        try:
            found = await admin.find_coordinators(GROUPS)
        finally:
            await admin.close()
        out = {}
        for group, answer in found.items():
            if isinstance(answer, KafkaError):
                raise answer
            out[group] = answer[0]
        return out

    return asyncio.run(find())


def _committed(bootstrap: str) -> dict[str, dict[tuple[str, int], int]]:
    async def read() -> dict[str, dict[tuple[str, int], int]]:
        admin = Admin(bootstrap)
        try:
            return {g: await admin.committed(g) for g in GROUPS}
        finally:
            await admin.close()

    return asyncio.run(read())


def _until(what: str, step: object, timeout: float) -> object:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return step()  # type: ignore[operator]
        except (KafkaError, OSError, AssertionError) as e:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: {e}") from e
            time.sleep(0.2)


def test_a_deleted_topics_offsets_go_from_every_brokers_groups(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 2) as brokers:
        bootstrap = ",".join(b.bootstrap for b in brokers)
        assert create_topic(brokers[0].port, "t", 2) == ErrorCode.none
        assert create_topic(brokers[0].port, "kept", 1) == ErrorCode.none

        async def commit_all() -> None:
            admin = Admin(bootstrap)
            try:
                for g in GROUPS:
                    await admin.commit(g, {("t", 0): 5, ("t", 1): 6, ("kept", 0): 7})
            finally:
                await admin.close()

        _until("commits", lambda: asyncio.run(commit_all()), 30)
        coordinators = _until("coordinators", lambda: _coordinators(bootstrap), 15)
        assert set(coordinators.values()) == {1, 2}  # both brokers coordinate some groups

        assert main(["topics", "delete", "t", "--bootstrap-server", brokers[0].bootstrap]) == 0

        def only_kept() -> None:
            left = _committed(bootstrap)
            assert left == {g: {("kept", 0): 7} for g in GROUPS}, left

        _until("offsets after the delete", only_kept, HEARTBEAT_MS / 1000 * 4 + 15)

        # The same name again is a new topic: no group has offsets for it.
        assert create_topic(brokers[1].port, "t", 2) == ErrorCode.none
        only_kept()
