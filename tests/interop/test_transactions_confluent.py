"""confluent-kafka's transactional producer against the broker: consume,
transform and produce with the offsets in the transaction, aborts, a producer
killed mid-transaction and fenced by its successor, and read_committed
consumers that see exactly the committed records, in order."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop


def _create(bootstrap: str, *topics: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(timeout=30)


def _producer(bootstrap: str, txn_id: str) -> Any:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 60_000,
        }
    )
    producer.init_transactions(30)
    return producer


def _read_committed(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    """Every record a read_committed consumer gets, waiting for ``expected``
    and then a little longer for any that should not come."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{topic}-{time.monotonic_ns()}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        quiet_until = None
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
            if len(values) >= expected:
                quiet_until = quiet_until or time.monotonic() + 1
                if time.monotonic() > quiet_until:
                    break
        return values
    finally:
        consumer.close()


def test_consume_transform_produce_commits_output_and_offsets_together(
    broker: BrokerThread,
) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    bootstrap = f"127.0.0.1:{broker.port}"
    _create(bootstrap, "in", "out")
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(6):
        plain.produce("in", b"%d" % i)
    assert plain.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "ctp",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    producer = _producer(bootstrap, "ctp-1")
    try:
        consumer.assign([TopicPartition("in", 0)])

        def transform(count: int, commit: bool) -> None:
            producer.begin_transaction()
            got = 0
            while got < count:
                message = consumer.poll(1)
                if message is None or message.error() is not None:
                    continue
                producer.produce("out", b"x" + message.value())
                got += 1
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
            )
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)

        transform(3, commit=True)
        transform(2, commit=False)
        # After an abort the consumer goes back to the committed offset.
        consumer.seek(consumer.committed([TopicPartition("in", 0)], 30)[0])
        transform(3, commit=True)
        committed = consumer.committed([TopicPartition("in", 0)], 30)[0]
        assert committed.offset == 6
    finally:
        consumer.close()
    assert _read_committed(bootstrap, "out", 6) == [b"x0", b"x1", b"x2", b"x3", b"x4", b"x5"]
    # The finished producer is fenced once a successor takes its id.
    successor = _producer(bootstrap, "ctp-1")
    producer.begin_transaction()
    producer.produce("out", b"zombie")
    with pytest.raises(KafkaException):
        producer.commit_transaction(30)
    successor.begin_transaction()
    successor.produce("out", b"x6")
    successor.commit_transaction(30)
    assert _read_committed(bootstrap, "out", 7)[-1] == b"x6"


_KILLED_PRODUCER = """
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "killed",
              "transaction.timeout.ms": 600000})
p.init_transactions(30)
p.begin_transaction()
for i in range(5):
    p.produce("out", b"lost%d" % i)
p.flush(30)
print("ready", flush=True)
time.sleep(600)
"""


def test_successor_of_a_killed_producer_aborts_its_open_transaction(
    broker: BrokerThread,
) -> None:
    bootstrap = f"127.0.0.1:{broker.port}"
    _create(bootstrap, "out")
    victim = subprocess.Popen(
        [sys.executable, "-c", _KILLED_PRODUCER, bootstrap], stdout=subprocess.PIPE, text=True
    )
    try:
        assert victim.stdout is not None
        assert victim.stdout.readline().strip() == "ready"
    finally:
        victim.kill()  # SIGKILL: the transaction stays open
        victim.wait()
    # The open transaction holds read_committed consumers back...
    assert _read_committed(bootstrap, "out", 0) == []
    successor = _producer(bootstrap, "killed")  # ...until the successor fences it
    successor.begin_transaction()
    successor.produce("out", b"kept")
    successor.commit_transaction(30)
    assert _read_committed(bootstrap, "out", 1) == [b"kept"]


def _transform_round(bootstrap: str, rounds: int, *, commit_last: bool) -> None:
    """``rounds`` transactions of two records each from "in" to "out", with
    the group's offsets; the last one is committed or left open."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "ctp",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition("in", 0)])
    producer = _producer(bootstrap, "ctp-crash")
    for n in range(rounds):
        producer.begin_transaction()
        got = 0
        while got < 2:
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                producer.produce("out", b"x" + message.value())
                got += 1
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
        )
        if n < rounds - 1 or commit_last:
            producer.commit_transaction(30)
        else:
            producer.flush(30)  # written, never committed


def test_broker_killed_mid_stream_keeps_output_and_offsets_consistent(
    tmp_path: Any,
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from process_broker import BrokerProcess

    broker = BrokerProcess(tmp_path / "data", None, "transaction.state.log.num.partitions=3")
    broker.start()
    try:
        bootstrap = f"127.0.0.1:{broker.port}"
        _create(bootstrap, "in", "out")
        plain = Producer({"bootstrap.servers": bootstrap})
        for i in range(10):
            plain.produce("in", b"%d" % i)
        assert plain.flush(30) == 0
        _transform_round(bootstrap, 3, commit_last=True)  # ends right after a commit
        broker.kill()
        broker.start()
        _transform_round(bootstrap, 2, commit_last=False)  # ends mid-transaction
        broker.kill()
        broker.start()
        _producer(bootstrap, "ctp-crash")  # the successor aborts what was left open
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctp"})
        try:
            offset = consumer.committed([TopicPartition("in", 0)], 30)[0].offset
        finally:
            consumer.close()
        assert offset == 8  # 3 + 1 committed transactions of two records
        out = _read_committed(bootstrap, "out", offset)
        assert out == [b"x%d" % i for i in range(offset)]
    finally:
        broker.stop()
