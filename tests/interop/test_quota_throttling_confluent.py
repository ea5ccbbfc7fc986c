"""A confluent-kafka producer over its producer_byte_rate, or a consumer over
its consumer_byte_rate, is slowed to about its quota (the broker answers with
a throttle time, a consumer's Fetch empty, and stops reading from it for that
long), while another client on the same broker is not."""

from __future__ import annotations

import threading
import time

import pytest
from client_quota_wire import alter

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

QUOTA = 100_000  # bytes/s
TOTAL = 600_000  # bytes each producer sends
MESSAGE = 5_000
CONSUMED = 300_000  # bytes each consumer reads


def _produce(bootstrap: str, client_id: str, elapsed: dict[str, float]) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "batch.size": 20_000,
            "linger.ms": 1,
            "compression.type": "none",
        }
    )
    payload = b"x" * MESSAGE
    started = time.monotonic()
    for _ in range(TOTAL // MESSAGE):
        while True:
            try:
                producer.produce("quota-t", payload)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    elapsed[client_id] = time.monotonic() - started


def test_a_capped_producer_is_slowed_and_another_is_not(tmp_path: object) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    # Two samples of a second: a first burst of one second's quota is free.
    b = BrokerThread(tmp_path / "data", quota_window_num=2).start()  # type: ignore[operator]
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("quota-t", 1, 1)])["quota-t"].result(20)
        entity = (("client-id", "capped"),)
        assert alter(b.port, [(entity, [("producer_byte_rate", QUOTA)])])[0][1] is None
        elapsed: dict[str, float] = {}
        threads = [
            threading.Thread(target=_produce, args=(b.bootstrap, name, elapsed))
            for name in ("capped", "free")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        assert set(elapsed) == {"capped", "free"}
        # At the quota, the capped producer needs about (TOTAL - QUOTA) / QUOTA = 5 s.
        assert elapsed["capped"] > 2.5, elapsed
        assert elapsed["free"] < elapsed["capped"] / 2, elapsed
        assert b.broker is not None
        throttles = b.broker.quotas.throttles
        assert throttles[("producer_byte_rate", "ANONYMOUS", "capped")].count > 0
        assert not any(client == "free" for _, _, client in throttles)
    finally:
        b.stop()


def _consume(
    bootstrap: str, client_id: str, count: int, elapsed: dict[str, float], got: dict[str, int]
) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "client.id": client_id, "group.id": client_id}
    )
    consumer.assign([TopicPartition("quota-t", 0, OFFSET_BEGINNING)])
    started = time.monotonic()
    got[client_id] = 0
    deadline = started + 60
    while got[client_id] < count and time.monotonic() < deadline:
        got[client_id] += sum(1 for m in consumer.consume(100, 0.5) if m.error() is None)
    elapsed[client_id] = time.monotonic() - started
    consumer.close()


def test_a_capped_consumer_is_slowed_and_another_is_not(tmp_path: object) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    b = BrokerThread(tmp_path / "data", quota_window_num=2).start()  # type: ignore[operator]
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("quota-t", 1, 1)])["quota-t"].result(20)
        # Batches well under what one response may hold at the quota.
        producer = Producer(
            {"bootstrap.servers": b.bootstrap, "compression.type": "none", "batch.size": 20_000}
        )
        count = CONSUMED // MESSAGE
        for _ in range(count):
            producer.produce("quota-t", b"x" * MESSAGE)
        assert producer.flush(30) == 0
        entity = (("client-id", "capped"),)
        assert alter(b.port, [(entity, [("consumer_byte_rate", QUOTA)])])[0][1] is None
        elapsed: dict[str, float] = {}
        got: dict[str, int] = {}
        threads = [
            threading.Thread(target=_consume, args=(b.bootstrap, name, count, elapsed, got))
            for name in ("capped", "free")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        assert set(elapsed) == {"capped", "free"}
        assert got == {"capped": count, "free": count}
        # At the quota, the capped consumer needs about (CONSUMED - QUOTA) / QUOTA = 2 s.
        assert elapsed["capped"] > 2.5, elapsed
        assert elapsed["free"] < elapsed["capped"] / 2, elapsed
    finally:
        b.stop()
