"""kcat (Debian's package, `make kcat`) drives kgroups as it drives Kafka:
metadata (-L), produce (-P), consume (-C) and a consumer group (-G)."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from kgroups.records.batch import iter_batches
from kgroups.records.compression import ZSTD

from broker_thread import BrokerThread

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (make kcat)"),
]

TIMEOUT = 60


def _kcat(broker: BrokerThread, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-q", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _create(broker: BrokerThread, name: str, partitions: int, **configs: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = NewTopic(name, partitions, 1, config=configs)
    admin.create_topics([topic])[name].result(20)


def _consumed(broker: BrokerThread, topic: str) -> list[dict[str, Any]]:
    out = _kcat(broker, "-C", "-t", topic, "-o", "beginning", "-e", "-J")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_metadata_lists_the_broker_and_topics(broker: BrokerThread) -> None:
    _create(broker, "listed", 3)
    metadata = json.loads(_kcat(broker, "-L", "-J"))
    assert [(b["id"], b["name"]) for b in metadata["brokers"]] == [(0, broker.bootstrap)]
    topics = {t["topic"]: t for t in metadata["topics"]}
    assert [p["partition"] for p in topics["listed"]["partitions"]] == [0, 1, 2]
    assert {p["leader"] for p in topics["listed"]["partitions"]} == {0}
    only = json.loads(_kcat(broker, "-L", "-J", "-t", "listed"))
    assert [t["topic"] for t in only["topics"]] == ["listed"]


def test_produce_and_consume_keys_values_and_headers(broker: BrokerThread) -> None:
    _create(broker, "lines", 1)
    lines = "".join(f"key-{i}:value-{i}\n" for i in range(50))
    _kcat(broker, "-P", "-t", "lines", "-p", "0", "-K", ":", "-H", "app=kcat", stdin=lines)
    consumed = _consumed(broker, "lines")
    assert [m["offset"] for m in consumed] == list(range(50))
    assert [(m["key"], m["payload"]) for m in consumed] == [
        (f"key-{i}", f"value-{i}") for i in range(50)
    ]
    assert {tuple(m["headers"]) for m in consumed} == {("app", "kcat")}


def test_compressed_produce_into_a_zstd_topic(broker: BrokerThread) -> None:
    _create(broker, "squeezed", 1, **{"compression.type": "zstd"})
    lines = "".join(f"line {i} " * 10 + "\n" for i in range(200))
    _kcat(broker, "-P", "-t", "squeezed", "-p", "0", "-z", "gzip", stdin=lines)

    def stored_codecs() -> set[int]:
        assert broker.broker is not None
        plog = broker.broker.partitions.log("squeezed", 0)
        chunk = bytes(plog.read(plog.log_start_offset, 1 << 30))
        return {h.compression for _p, h in iter_batches(chunk)}

    assert broker.call(stored_codecs) == {ZSTD}
    assert [m["payload"] for m in _consumed(broker, "squeezed")] == lines.splitlines()


def test_balanced_consumer_group_reads_everything_and_commits(broker: BrokerThread) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    _create(broker, "grouped", 2)
    for partition in (0, 1):
        lines = "".join(f"p{partition}-{i}\n" for i in range(20))
        _kcat(broker, "-P", "-t", "grouped", "-p", str(partition), stdin=lines)
    out = _kcat(
        broker,
        "-G",
        "kcat-group",
        "-X",
        "auto.offset.reset=earliest",
        "-e",
        "-J",
        "grouped",
    )
    consumed = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert sorted(m["payload"] for m in consumed) == sorted(
        f"p{p}-{i}" for p in (0, 1) for i in range(20)
    )

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    request = ConsumerGroupTopicPartitions(
        "kcat-group", [TopicPartition("grouped", 0), TopicPartition("grouped", 1)]
    )
    result = admin.list_consumer_group_offsets([request])["kcat-group"].result(20)
    assert {tp.partition: tp.offset for tp in result.topic_partitions} == {0: 20, 1: 20}


def test_query_mode_finds_offsets_by_timestamp(broker: BrokerThread) -> None:
    from confluent_kafka import Producer

    _create(broker, "timed", 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("timed", value=b"v", partition=0, timestamp=1_000_000 + 1000 * i)
    assert producer.flush(20) == 0
    # -Q answers "topic [partition] offset N": the first at or after the timestamp.
    assert _kcat(broker, "-Q", "-t", "timed:0:1004500").split() == ["timed", "[0]", "offset", "5"]
    assert _kcat(broker, "-Q", "-t", "timed:0:999999").split() == ["timed", "[0]", "offset", "0"]
