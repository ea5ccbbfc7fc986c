"""Leader epochs across a change of leader in a cluster: the new leader
answers where its epoch began for the old one, fences clients that still
believe in the old leader, and a real consumer validates its position and
goes on reading without a gap or a duplicate."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from cluster_brokers import (
    EARLIEST,
    SESSION_MS,
    cluster_broker,
    create_topic,
    metadata,
    produce,
    running_cluster,
    wait_for,
)
from kio.schema.fetch.v12 import FetchRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.list_offsets.v7 import ListOffsetsRequest
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic
from kio.schema.offset_for_leader_epoch.v4 import OffsetForLeaderEpochRequest
from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import BrokerId, TopicName, i8, i32, i64

from process_broker import free_port
from prometheus_text import scrape
from raw_wire import call_once

BATCHES = 30  # before the move, three records each
T0 = 1_700_000_000_000


def leader_and_epoch(port: int, topic: str) -> tuple[int, int]:
    (partition,) = metadata(port, topic).topics[0].partitions
    return partition.leader_id, partition.leader_epoch


def epoch_end(port: int, epoch: int, current: int = -1) -> tuple[int, int, int]:
    request = OffsetForLeaderEpochRequest(
        replica_id=BrokerId(-1),
        topics=(
            OffsetForLeaderTopic(
                topic=TopicName("e"),
                partitions=(
                    OffsetForLeaderPartition(
                        partition=i32(0), current_leader_epoch=i32(current), leader_epoch=i32(epoch)
                    ),
                ),
            ),
        ),
    )
    p = call_once(port, request, timeout=20).topics[0].partitions[0]
    return p.error_code, p.leader_epoch, p.end_offset


def fetch_error(port: int, current: int) -> int:
    request = FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=i32Timedelta.parse(timedelta(0)),
        min_bytes=i32(0),
        max_bytes=i32(1 << 20),
        isolation_level=i8(0),
        topics=(
            FetchTopic(
                topic=TopicName("e"),
                partitions=(
                    FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(current),
                        fetch_offset=i64(0),
                        partition_max_bytes=i32(1 << 20),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )
    error: int = call_once(port, request, timeout=20).responses[0].partitions[0].error_code
    return error


def listed(port: int, timestamp: int, current: int = -1) -> tuple[int, int, int]:
    request = ListOffsetsRequest(
        replica_id=BrokerId(-1),
        isolation_level=i8(0),
        topics=(
            ListOffsetsTopic(
                name=TopicName("e"),
                partitions=(
                    ListOffsetsPartition(
                        partition_index=i32(0),
                        current_leader_epoch=i32(current),
                        timestamp=i64(timestamp),
                    ),
                ),
            ),
        ),
    )
    p = call_once(port, request, timeout=20).topics[0].partitions[0]
    return p.error_code, p.offset, p.leader_epoch


def test_the_new_leader_answers_where_its_epoch_began(tmp_path: Path, store_url: str) -> None:
    with running_cluster(tmp_path, store_url, 3) as brokers:
        assert create_topic(brokers[0].port, "e", 1) == ErrorCode.none
        wait_for(lambda: leader_and_epoch(brokers[0].port, "e")[0] > 0)
        first, old = leader_and_epoch(brokers[0].port, "e")
        for i in range(BATCHES):
            values = (b"a%d" % i, b"b%d" % i, b"c%d" % i)
            assert produce(brokers[first - 1].port, "e", 0, *values, timestamp=T0 + i)[0] == 0
        moved_at = 3 * BATCHES
        assert epoch_end(brokers[first - 1].port, old) == (ErrorCode.none, old, moved_at)

        assert brokers[first - 1].terminate() == 0
        survivors = [b for i, b in enumerate(brokers, 1) if i != first]
        wait_for(lambda: leader_and_epoch(survivors[0].port, "e")[0] not in (-1, first))
        second, new = leader_and_epoch(survivors[0].port, "e")
        assert new > old
        leader = brokers[second - 1]
        other = next(b for b in survivors if b is not leader)
        wait_for(lambda: produce(leader.port, "e", 0, b"d", b"e", timestamp=T0 + 100)[0] == 0)
        end = moved_at + 2

        # The old epoch ends where the new one began; the new one at the log end.
        assert epoch_end(leader.port, old) == (ErrorCode.none, old, moved_at)
        assert epoch_end(leader.port, old, current=new) == (ErrorCode.none, old, moved_at)
        assert epoch_end(leader.port, new, current=new) == (ErrorCode.none, new, end)
        assert epoch_end(leader.port, new - 1) == (ErrorCode.none, old, moved_at)
        assert epoch_end(leader.port, old - 1) == (ErrorCode.none, old - 1, 0)
        assert epoch_end(leader.port, new + 1) == (ErrorCode.none, -1, -1)
        # A client that still believes in the old leader is fenced; one ahead waits.
        assert epoch_end(leader.port, old, current=old)[0] == ErrorCode.fenced_leader_epoch
        assert epoch_end(leader.port, new, current=new + 1)[0] == ErrorCode.unknown_leader_epoch
        wait_for(lambda: leader_and_epoch(other.port, "e") == (second, new))
        assert epoch_end(other.port, old)[0] == ErrorCode.not_leader_or_follower
        assert fetch_error(leader.port, old) == ErrorCode.fenced_leader_epoch
        assert fetch_error(leader.port, new + 1) == ErrorCode.unknown_leader_epoch
        assert fetch_error(leader.port, new) == ErrorCode.none
        assert listed(leader.port, -1, current=old)[0] == ErrorCode.fenced_leader_epoch
        # ListOffsets answers the epoch of what it found.
        assert listed(leader.port, -1, current=new) == (ErrorCode.none, end, new)
        assert listed(leader.port, EARLIEST) == (ErrorCode.none, 0, old)
        assert listed(leader.port, T0 + 1) == (ErrorCode.none, 3, old)
        assert listed(leader.port, T0 + 100) == (ErrorCode.none, moved_at, new)


def _requests(port: int, api: str) -> float:
    return scrape(port).get("kafka_network_requestmetrics_requests_total", request=api)


@contextmanager
def cluster_with_metrics(data: Path, store_url: str, ports: list[int]) -> Iterator[list[Any]]:
    brokers = [
        cluster_broker(data, store_url, i, f"metrics.port={port}")
        for i, port in enumerate(ports, 1)
    ]
    try:
        for b in brokers:
            b.start()
        wait_for(lambda: len(metadata(brokers[0].port).brokers) == len(brokers))
        yield brokers
    finally:
        for b in brokers:
            b.stop()


def test_a_consumer_reads_on_across_a_change_of_leader(tmp_path: Path, store_url: str) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    ports = [free_port() for _ in range(2)]
    with cluster_with_metrics(tmp_path, store_url, ports) as brokers:
        bootstrap = ",".join(b.bootstrap for b in brokers)
        assert create_topic(brokers[0].port, "e", 1) == ErrorCode.none
        wait_for(lambda: leader_and_epoch(brokers[0].port, "e")[0] > 0)
        first, old = leader_and_epoch(brokers[0].port, "e")
        survivor = brokers[2 - first]
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        sent = [b"v%d" % i for i in range(2000)]
        for value in sent[:1000]:
            producer.produce("e", value, partition=0)
        assert producer.flush(30) == 0

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "reader",
                "enable.auto.commit": False,
                "max.partition.fetch.bytes": 4096,
                "topic.metadata.refresh.interval.ms": 500,
            }
        )
        consumer.assign([TopicPartition("e", 0, OFFSET_BEGINNING)])
        got: list[bytes] = []
        errors: list[Any] = []

        def poll() -> bool:
            for m in consumer.consume(100, 0.1):
                if m.error() is not None:
                    errors.append(m.error())
                else:
                    got.append(m.value())
            return True

        wait_for(lambda: poll() and len(got) >= 300, 20)
        brokers[first - 1].kill()
        for value in sent[1000:]:
            producer.produce("e", value, partition=0)
        assert producer.flush(SESSION_MS / 1000 + 20) == 0
        second, new = leader_and_epoch(survivor.port, "e")
        assert (second, new > old) == (2 - first + 1, True)
        wait_for(lambda: poll() and len(got) >= len(sent), 30)
        time.sleep(1)
        poll()
        consumer.close()
        producer.flush(1)
        assert errors == []
        assert got == sent
        # The consumer checked its position against the new leader's epochs.
        assert _requests(ports[second - 1], "OffsetForLeaderEpoch") > 0
