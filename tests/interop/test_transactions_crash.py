"""A consume-transform-produce application keeps exactly-once output when
the broker is killed (SIGKILL) at random points of its loop: the app starts
over from the committed offsets each time, and once it is done the output
read at read_committed holds each input record once, in order, and the
group's committed offset counts exactly the committed outputs."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from process_broker import BrokerProcess

pytestmark = pytest.mark.interop

GROUP = "crash-ctp"


_APP = """
import sys, time
from confluent_kafka import Consumer, Producer, TopicPartition

bootstrap, target = sys.argv[1], int(sys.argv[2])
common = {"reconnect.backoff.max.ms": 200, "retry.backoff.max.ms": 200}
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "crash-ctp",
                     "transaction.timeout.ms": 60000, **common})
producer.init_transactions(10)  # fences the previous life, settles what it left
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "crash-ctp",
                     "enable.auto.commit": False, "isolation.level": "read_committed", **common})
position = max(consumer.committed([TopicPartition("in", 0)], 10)[0].offset, 0)
consumer.assign([TopicPartition("in", 0, position)])
while position < target:
    producer.begin_transaction()
    batch = [m for m in consumer.consume(4, 0.5) if m.error() is None]
    for message in batch:
        producer.produce("out", b"x" + message.value())
    time.sleep(0.05)  # the transform's work
    if batch:
        position = batch[-1].offset() + 1
        producer.send_offsets_to_transaction(
            [TopicPartition("in", 0, position)], consumer.consumer_group_metadata(), 5)
    producer.commit_transaction(5)
print("done", flush=True)
"""


def _run_app(bootstrap: str, target: int, crash: Callable[[], None], crash_after: float) -> None:
    """Runs the application until it has committed every input record up to
    ``target``, calling ``crash`` ``crash_after`` seconds into its first life,
    which must still be running then. A life that fails (the broker went
    away under it) or stalls is ended with SIGKILL and the next one resumes
    from the committed offsets, as a supervisor would restart it. (After a
    broker restart librdkafka's send_offsets_to_transaction can wait on its
    cached group coordinator past its timeout, without sending anything:
    confluentinc/librdkafka#5456.)"""
    deadline = time.monotonic() + 25
    first = True
    while time.monotonic() < deadline:
        app = subprocess.Popen(
            [sys.executable, "-c", _APP, bootstrap, str(target)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            if first:
                time.sleep(crash_after)
                assert app.poll() is None, "the crash came after the application finished"
                crash()
                first = False
            out, _ = app.communicate(timeout=8)
            if app.returncode == 0 and out.strip() == "done":
                return
        except subprocess.TimeoutExpired:
            pass
        finally:
            app.kill()
            app.wait()
    raise AssertionError("the application did not finish in time")


def _committed(bootstrap: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        offset: int = consumer.committed([TopicPartition("in", 0)], 30)[0].offset
        return offset
    finally:
        consumer.close()


def _read_committed(bootstrap: str, topic: str) -> list[bytes]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "crash-reader",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        values: list[bytes] = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is None:
                values.append(message.value())
            elif message.error().code() == KafkaError._PARTITION_EOF:
                return values
        raise AssertionError(f"no end of partition; read {len(values)}")
    finally:
        consumer.close()


def test_broker_killed_at_random_points_keeps_exactly_once(tmp_path: Path) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    rng = random.Random(20261125)
    broker = BrokerProcess(tmp_path / "data", None, "transaction.state.log.num.partitions=3")
    broker.start()
    try:
        bootstrap = broker.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(t, 1, 1) for t in ("in", "out")]).values():
            future.result(timeout=30)
        total = 0
        for _ in range(3):
            plain = Producer({"bootstrap.servers": bootstrap})
            for i in range(total, total + 40):
                plain.produce("in", b"%d" % i)
            assert plain.flush(30) == 0
            total += 40
            down_for = rng.uniform(0, 0.3)

            def crash() -> None:
                broker.kill()
                time.sleep(down_for)  # noqa: B023 - called within this iteration
                broker.start()

            # The app takes about 0.3 s to start, then 10 transactions of 50 ms.
            _run_app(bootstrap, total, crash, rng.uniform(0.1, 0.7))
        out = _read_committed(bootstrap, "out")
        committed = _committed(bootstrap)
        assert out == [b"x%d" % i for i in range(total)]
        assert committed == len(out)
    finally:
        broker.stop()
