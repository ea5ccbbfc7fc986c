"""docs/transactions.md's consume-transform-produce example runs as written
against a broker and does what it says: each input word once, in capitals,
and the group's offsets committed with the output."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

DOC = Path(__file__).parents[2] / "docs" / "transactions.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)

WORDS = [b"one", b"two", b"three", b"four", b"five"]


def test_doc_has_the_example() -> None:
    assert len(BLOCKS) == 1
    assert "send_offsets_to_transaction" in BLOCKS[0]


def test_doc_example_runs(broker: BrokerThread, tmp_path: Path) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = f"127.0.0.1:{broker.port}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in ("words", "shouted")]).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for word in WORDS:
        producer.produce("words", word)
    assert producer.flush(30) == 0

    (tmp_path / "example.py").write_text(BLOCKS[0])
    result = subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        env={**os.environ, "BOOTSTRAP_SERVERS": bootstrap},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    # The example's downstream reader printed the committed output.
    assert result.stdout.split() == [w.decode().upper() for w in WORDS]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "shouter"})
    try:
        committed = consumer.committed([TopicPartition("words", 0)], 30)[0]
    finally:
        consumer.close()
    assert committed.offset == len(WORDS)
