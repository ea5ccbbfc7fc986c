"""EmbeddedBroker, the public test broker: overrides, data directories,
restart, and use from asyncio code."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kgroups.client import AsyncProducer
from kgroups.clock import ManualClock
from kgroups.testing import EmbeddedBroker
from kgroups.testing.helpers import KafkaHelpers


def test_overrides_reach_the_broker() -> None:
    with EmbeddedBroker(overrides={"num.partitions": 3}) as broker:
        helpers = KafkaHelpers(broker.bootstrap_servers)
        helpers.produce("auto", [b"x"])  # auto-created with the broker's num.partitions
        from kgroups.client import Producer

        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        try:
            assert producer.partitions_for("auto") == [0, 1, 2]
        finally:
            producer.close()


def test_temporary_data_is_removed_and_given_data_is_kept(tmp_path: Path) -> None:
    temporary = EmbeddedBroker()
    temporary.stop()
    assert not temporary.data_dir.exists()

    with EmbeddedBroker(tmp_path / "data") as broker:
        KafkaHelpers(broker.bootstrap_servers).produce("kept", [b"a", b"b"])
    with EmbeddedBroker(tmp_path / "data") as broker:
        assert KafkaHelpers(broker.bootstrap_servers).read("kept", 2) == [b"a", b"b"]


def test_restart_keeps_port_and_data() -> None:
    with EmbeddedBroker() as broker:
        helpers = KafkaHelpers(broker.bootstrap_servers)
        helpers.produce("t", [b"before"])
        bootstrap = broker.bootstrap_servers
        broker.restart()
        assert broker.bootstrap_servers == bootstrap
        assert helpers.read("t", 1) == [b"before"]


def test_usable_from_asyncio_code() -> None:
    async def main() -> int:
        async with EmbeddedBroker() as broker:
            producer = AsyncProducer({"bootstrap.servers": broker.bootstrap_servers})
            try:
                metadata = await (await producer.send("a", b"v"))
            finally:
                await producer.close()
            return metadata.offset

    assert asyncio.run(main()) == 0


def test_a_manual_clock_drives_the_broker() -> None:
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, TopicPartition

    clock = ManualClock(1_000_000)
    with EmbeddedBroker(clock=clock) as broker:
        helpers = KafkaHelpers(broker.bootstrap_servers)
        helpers.create_topic("t", config={"message.timestamp.type": "LogAppendTime"})
        clock.advance(5)
        helpers.produce("t", [b"a"])
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g"})
        try:
            consumer.assign([TopicPartition("t", 0, 0)])
            message = None
            while message is None:
                message = consumer.poll(1)
            assert message.timestamp() == (TIMESTAMP_LOG_APPEND_TIME, 1_000_005)
        finally:
            consumer.close()


def test_a_process_broker_cannot_take_a_clock() -> None:
    with pytest.raises(ValueError):
        EmbeddedBroker(process=True, clock=ManualClock())


def test_a_bad_override_fails_the_start_and_leaves_nothing_behind() -> None:
    import tempfile
    import threading

    # Each broker's directory is under its process's own parent (temp_dirs.py).
    def broker_dirs() -> set[Path]:
        return set(Path(tempfile.gettempdir()).glob("kgroups-pid*/*"))

    threads = threading.active_count()
    temporary = broker_dirs()
    with pytest.raises(Exception, match=r"num\.partitions"):
        EmbeddedBroker(overrides={"num.partitions": "zero"})
    assert threading.active_count() == threads
    assert broker_dirs() <= temporary
