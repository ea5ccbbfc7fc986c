"""kill -9 of the broker while a producer with acks=all sends: nothing acknowledged is lost."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from process_broker import BrokerProcess

pytestmark = pytest.mark.interop


def test_acknowledged_messages_survive_sigkill(tmp_path: Path) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = BrokerProcess(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("crash", 3, 1)])["crash"].result(20)
        acked: set[bytes] = set()
        lock = threading.Lock()

        def on_delivery(err: object, msg: object) -> None:
            if err is None:
                with lock:
                    acked.add(msg.value())  # type: ignore[attr-defined]

        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "acks": "all",
                "linger.ms": 2,
                "message.timeout.ms": 5000,
                "reconnect.backoff.max.ms": 200,
            }
        )
        sent = 0
        killed_at = None
        started = time.time()
        while time.time() - started < 4:
            try:
                producer.produce(
                    "crash",
                    key=str(sent).encode(),
                    value=f"m{sent}".encode(),
                    on_delivery=on_delivery,
                )
            except BufferError:  # the broker is down and the queue is full: wait
                producer.poll(0.05)
                continue
            sent += 1
            producer.poll(0)
            if killed_at is None and time.time() - started > 1.5:
                broker.kill()
                killed_at = sent
            if sent % 1000 == 0:
                time.sleep(0.01)
        producer.flush(10)
        assert killed_at is not None and len(acked) > 0

        broker.start()
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "reader",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition("crash", p, OFFSET_BEGINNING) for p in range(3)])
        stored: set[bytes] = set()
        idle_since = time.time()
        while time.time() - idle_since < 3:
            msg = consumer.poll(0.3)
            if msg is None or msg.error():
                continue
            stored.add(msg.value())
            idle_since = time.time()
        consumer.close()
        missing = acked - stored
        assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {sorted(missing)[:5]}"
    finally:
        broker.stop()
