"""Deleting a topic deletes its committed offsets from every group, durably, so
a topic created again under the same name starts without them (Kafka's
onPartitionsDeleted)."""

from __future__ import annotations

import time
from pathlib import Path

from kgroups.client.admin import Admin
from kgroups.handlers.topic_changes import delete_topics

from broker_thread import BrokerThread


def _committed(broker: BrokerThread, group: str) -> dict[tuple[str, int], int]:
    async def go() -> dict[tuple[str, int], int]:
        admin = Admin(broker.bootstrap)
        try:
            return await admin.committed(group)
        finally:
            await admin.close()

    return broker.run(go())


def _commit(broker: BrokerThread, group: str, offsets: dict[tuple[str, int], int]) -> None:
    async def go() -> None:
        admin = Admin(broker.bootstrap)
        try:
            await admin.commit(group, offsets)
        finally:
            await admin.close()

    broker.run(go())


def test_a_recreated_topic_has_no_offsets_even_after_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerThread(data).start()
    try:
        assert broker.broker is not None
        b = broker.broker
        broker.call(lambda: b.create_topic("t", 2, {}))
        broker.call(lambda: b.create_topic("kept", 1, {}))
        # Groups on different __consumer_offsets partitions, both holding "t".
        _commit(broker, "g1", {("t", 0): 5, ("t", 1): 6, ("kept", 0): 7})
        _commit(broker, "g2", {("t", 1): 8})
        (deleted,) = broker.run(delete_topics(b, ["t"]))
        assert not isinstance(deleted, Exception), deleted
        broker.call(lambda: b.create_topic("t", 2, {}))
        assert _committed(broker, "g1") == {("kept", 0): 7}
        assert _committed(broker, "g2") == {}
    finally:
        broker.stop()

    broker = BrokerThread(data).start()
    try:
        for _ in range(100):
            try:
                assert _committed(broker, "g1") == {("kept", 0): 7}
                break
            except Exception as e:  # still loading
                if "load" not in str(e).lower():
                    raise
                time.sleep(0.05)
        assert _committed(broker, "g2") == {}
    finally:
        broker.stop()
