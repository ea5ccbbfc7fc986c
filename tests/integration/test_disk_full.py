"""A broker whose disk fills up: a real producer writes until the broker refuses,
then the broker is killed, given room again and restarted. Every acknowledged
record is read back at the offset it was acknowledged with, and no offset was
ever acknowledged twice."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from process_broker import BrokerProcess

pytestmark = pytest.mark.interop


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs, mounted for the test (root only)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def grow(mount_point: Path) -> None:
    subprocess.run(["mount", "-o", "remount,size=16m", str(mount_point)], check=True)


def test_acknowledged_records_survive_a_full_disk(small_disk: Path) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    data = small_disk  # the broker's own log goes next to it, not on it
    broker = BrokerProcess(data).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        topic = NewTopic(
            "full", 2, 1, config={"segment.bytes": "6000", "index.interval.bytes": "0"}
        )
        admin.create_topics([topic])["full"].result(20)
        acked: dict[tuple[int, int], bytes] = {}
        refused = 0
        lock = threading.Lock()

        def on_delivery(err: object, msg: object) -> None:
            nonlocal refused
            with lock:
                if err is not None:
                    refused += 1
                    return
                key = (msg.partition(), msg.offset())  # type: ignore[attr-defined]
                assert key not in acked, f"offset {key} acknowledged twice"
                acked[key] = msg.value()  # type: ignore[attr-defined]

        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "acks": "all",
                "linger.ms": 1,
                "batch.num.messages": 1,
                "message.timeout.ms": 3000,
                "retry.backoff.ms": 50,
            }
        )

        def produce(count: int, until_refused: int | None = None) -> None:
            started = time.time()
            for i in range(count):
                if until_refused is not None and refused >= until_refused:
                    break
                if time.time() - started > 40:
                    break
                while True:
                    try:
                        producer.produce(
                            "full", value=b"%08d" % i + b"x" * 1000, on_delivery=on_delivery
                        )
                        break
                    except BufferError:
                        producer.poll(0.05)
                producer.poll(0)
            producer.flush(10)

        produce(1_000_000, until_refused=50)
        assert refused >= 50, "the disk never filled up"
        full_at = len(acked)
        assert full_at > 500
        # Room again (an operator deleted something): appends resume.
        grow(small_disk)
        produce(2000)
        # Most of them: on a busy machine some may run past message.timeout.ms.
        assert len(acked) > full_at + 500
        broker.kill()
        grow(small_disk)
        broker = BrokerProcess(data, broker.port).start()
        stored = _read_all(broker.bootstrap, "full", 2)
        for key, value in acked.items():
            assert stored.get(key) == value, f"acknowledged record at {key} lost or replaced"
        # Appends go on after the restart, at offsets never acknowledged before.
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
        after: list[tuple[int, int]] = []
        for i in range(20):
            producer.produce(
                "full",
                value=b"after-%d" % i,
                partition=i % 2,
                on_delivery=lambda err, msg: after.append((msg.partition(), msg.offset())),
            )
        producer.flush(10)
        assert len(after) == 20 and not set(after) & set(acked)
    finally:
        broker.stop()


def _read_all(bootstrap: str, topic: str, partitions: int) -> dict[tuple[int, int], bytes]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        stored: dict[tuple[int, int], bytes] = {}
        at_end: set[int] = set()
        deadline = time.time() + 60
        while len(at_end) < partitions and time.time() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == -191:  # _PARTITION_EOF
                    at_end.add(msg.partition())
                continue
            stored[(msg.partition(), msg.offset())] = msg.value()
        assert len(at_end) == partitions
        return stored
    finally:
        consumer.close()


def test_a_refused_produce_never_costs_an_acknowledged_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same with the failure placed exactly: the batch reaches the .log file but
    its index entry does not fit. The producer gets KAFKA_STORAGE_ERROR, and once
    there is room again the next batch takes that offset, before and after a restart."""
    from confluent_kafka import KafkaError, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from faulty_disk import ENOSPC, FaultyDisk

    from broker_thread import BrokerThread

    data = tmp_path / "data"
    disk = FaultyDisk(monkeypatch, data.parent)
    broker = BrokerThread(data).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        topic = NewTopic("t", 1, 1, config={"index.interval.bytes": "0"})
        admin.create_topics([topic])["t"].result(20)
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0, "retries": 0}
        )
        acked: dict[int, bytes] = {}
        errors: list[int] = []

        def on_delivery(err: KafkaError | None, msg: object) -> None:
            if err is not None:
                errors.append(err.code())
            else:
                offset = msg.offset()  # type: ignore[attr-defined]
                assert offset not in acked, f"offset {offset} acknowledged twice"
                acked[offset] = msg.value()  # type: ignore[attr-defined]

        def produce(first: int, count: int) -> None:
            for i in range(first, first + count):
                producer.produce("t", value=b"v%d" % i, on_delivery=on_delivery)
                producer.flush(10)  # one batch per record

        produce(0, 20)
        disk.fail("write", ENOSPC, name_contains=".index", times=None)
        produce(20, 10)
        assert errors == [KafkaError.KAFKA_STORAGE_ERROR] * 10
        disk.heal()
        produce(30, 20)
        assert sorted(acked) == list(range(40))
        consumed = _read_all(broker.bootstrap, "t", 1)
        assert consumed == {(0, o): v for o, v in acked.items()}
        broker.stop()
        (data / "cleanly_shutdown").unlink()  # as after a crash: recover every batch
        broker = BrokerThread(data).start()
        assert _read_all(broker.bootstrap, "t", 1) == consumed
    finally:
        broker.stop()


def test_a_refused_offset_commit_is_rolled_back_and_never_replaces_a_later_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Offset commits go through the same log: one whose index entry does not fit
    is answered with an error and forgotten; later commits win, after a restart too."""
    import asyncio

    from confluent_kafka.admin import AdminClient, NewTopic
    from faulty_disk import ENOSPC, FaultyDisk

    from kgroups.client.admin import Admin
    from kgroups.errors import KafkaError

    from broker_thread import BrokerThread

    data = tmp_path / "data"
    disk = FaultyDisk(monkeypatch, data.parent)
    broker = BrokerThread(data, offsets_topic_num_partitions=1).start()

    async def commit(offset: int) -> bool:
        admin = Admin(broker.bootstrap)
        try:
            await admin.commit("g", {("t", 0): offset})
            return True
        except KafkaError:
            return False
        finally:
            await admin.close()

    async def committed() -> int:
        admin = Admin(broker.bootstrap)
        try:
            for _ in range(100):
                try:
                    return (await admin.committed("g"))[("t", 0)]
                except KafkaError:  # loading after a restart
                    await asyncio.sleep(0.1)
            raise AssertionError("offsets never loaded")
        finally:
            await admin.close()

    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(20)
        assert asyncio.run(commit(1))
        index = "__consumer_offsets-0/00000000000000000000.index"
        disk.fail("write", ENOSPC, name_contains=index, times=None)
        # Commits go through until one needs an index entry (every 4 KiB).
        offset = 2
        while asyncio.run(commit(offset)):
            offset += 1
            assert offset < 1000
        refused = offset
        assert asyncio.run(committed()) == refused - 1
        disk.heal()
        assert asyncio.run(commit(refused + 1))
        assert asyncio.run(committed()) == refused + 1
        broker.stop()
        (data / "cleanly_shutdown").unlink()  # as after a crash: recover every batch
        broker = BrokerThread(data, offsets_topic_num_partitions=1).start()
        assert asyncio.run(committed()) == refused + 1
    finally:
        broker.stop()
