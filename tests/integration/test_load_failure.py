"""A `__consumer_offsets` partition that cannot be loaded makes its groups
unavailable (as Kafka does) instead of serving them from a partial state; the
other partitions' groups are unaffected."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kgroups.client.admin import Admin
from kgroups.coordinator.records import encode_offset_commit_key
from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.records.batch import encode_batch
from kgroups.storage.log import SegmentLog
from kgroups.topics.placement import OFFSETS_TOPIC, partition_for_group

from broker_thread import BrokerThread


def test_an_unloadable_partition_makes_only_its_groups_unavailable(tmp_path: Path) -> None:
    data = tmp_path / "data"
    bad, good = "g", "other"
    assert partition_for_group(bad, 5) != partition_for_group(good, 5)

    async def commit(bootstrap: str, group: str) -> None:
        admin = Admin(bootstrap)
        try:
            await admin.commit(group, {("t", 0): 7})
        finally:
            await admin.close()

    broker = BrokerThread(data).start()
    try:
        assert broker.broker is not None
        broker.call(lambda: broker.broker.create_topic("t", 1, {}))  # type: ignore[union-attr]
        broker.run(commit(broker.bootstrap, bad))
        broker.run(commit(broker.bootstrap, good))
    finally:
        broker.stop()

    # An offset commit record whose value is not an offset commit value.
    plog = SegmentLog.open(data / f"{OFFSETS_TOPIC}-{partition_for_group(bad, 5)}", LogConfig(), 0)
    plog.append_batch(
        encode_batch([(encode_offset_commit_key(bad, "t", 0), b"\x00\x09", (), 0)]), 0
    )
    plog.close()

    broker = BrokerThread(data).start()
    try:

        async def committed(group: str) -> dict[tuple[str, int], int]:
            admin = Admin(broker.bootstrap)
            try:
                for _ in range(100):
                    try:
                        return await admin.committed(group)
                    except KafkaError as e:
                        if e.error_code != ErrorCode.coordinator_load_in_progress:
                            raise
                        await asyncio.sleep(0.05)
                raise AssertionError("still loading")
            finally:
                await admin.close()

        assert broker.run(committed(good)) == {("t", 0): 7}
        with pytest.raises(KafkaError) as failure:
            broker.run(committed(bad))
        assert failure.value.error_code == ErrorCode.coordinator_not_available
    finally:
        broker.stop()
