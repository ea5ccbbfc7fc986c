"""Brokers in cluster mode as real `kgroups serve` processes on one PostgreSQL
database, and the raw requests the cluster tests send them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic, CreatableTopicConfig
from kio.schema.fetch.v12 import FetchRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.list_offsets.v7 import ListOffsetsRequest
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.static.primitive import Records, i32Timedelta, i64

from kgroups.errors import ErrorCode
from kgroups.protocol.types import BrokerId, TopicName, i8, i16, i32
from kgroups.records.batch import decode_records, encode_batch

from process_broker import BrokerProcess
from raw_wire import call_once

# Short leases, so that a takeover takes seconds in tests.
HEARTBEAT_MS = 500
SESSION_MS = 3000
TIMEOUT = i32Timedelta.parse(timedelta(seconds=10))


def cluster_broker(data: Path, store_url: str, broker_id: int, *overrides: str) -> BrokerProcess:
    return BrokerProcess(
        data / f"b{broker_id}",
        None,
        f"cluster.store.url={store_url}",
        f"broker.id={broker_id}",
        f"broker.heartbeat.interval.ms={HEARTBEAT_MS}",
        f"broker.session.timeout.ms={SESSION_MS}",
        *overrides,
    )


@contextmanager
def running_cluster(
    data: Path, store_url: str, count: int, *overrides: str
) -> Iterator[list[BrokerProcess]]:
    brokers = [cluster_broker(data, store_url, i + 1, *overrides) for i in range(count)]
    try:
        for b in brokers:
            b.start()
        wait_for(lambda: len(metadata(brokers[0].port).brokers) == count)
        yield brokers
    finally:
        for b in brokers:
            b.stop()


def wait_for(condition: Callable[[], bool], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def metadata(port: int, *topics: str) -> Any:
    return call_once(
        port,
        MetadataRequest(
            topics=tuple(MetadataRequestTopic(topic_id=None, name=TopicName(t)) for t in topics)
            if topics
            else None,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
        timeout=20,
    )


def create_topic(port: int, name: str, partitions: int, **configs: str) -> ErrorCode:
    """Create a topic; ``configs`` by Kafka's names with dots as underscores."""
    response = call_once(
        port,
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=TopicName(name),
                    num_partitions=i32(partitions),
                    replication_factor=i16(-1),
                    assignments=(),
                    configs=tuple(
                        CreatableTopicConfig(name=k.replace("_", "."), value=v)
                        for k, v in configs.items()
                    ),
                ),
            ),
            timeout=TIMEOUT,
            validate_only=False,
        ),
        timeout=20,
    )
    error: ErrorCode = response.topics[0].error_code
    return error


def leaders(port: int, topic: str) -> dict[int, int]:
    """partition -> leader broker id, once every partition has a live leader."""
    result: dict[int, int] = {}

    def ready() -> bool:
        topics = metadata(port, topic).topics
        if topics[0].error_code != ErrorCode.none:
            return False
        result.clear()
        result.update({p.partition_index: p.leader_id for p in topics[0].partitions})
        return all(leader >= 0 for leader in result.values())

    wait_for(ready)
    return result


def produce(
    port: int, topic: str, partition: int, *values: bytes, timestamp: int | None = None
) -> tuple[ErrorCode, int]:
    """Produce with acks=all; the error code and base offset."""
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    batch = encode_batch([(None, v, (), ts) for v in values])
    return produce_batch(port, topic, partition, batch)


def produce_batch(port: int, topic: str, partition: int, batch: bytes) -> tuple[ErrorCode, int]:
    """Produce one encoded batch with acks=all; the error code and base offset."""
    request = ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=TIMEOUT,
        topic_data=(
            TopicProduceData(
                name=TopicName(topic),
                partition_data=(
                    PartitionProduceData(index=i32(partition), records=cast(Records, batch)),
                ),
            ),
        ),
    )
    answer = call_once(port, request, timeout=20).responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset


def fetch(port: int, topic: str, partition: int, offset: int) -> tuple[ErrorCode, list[bytes]]:
    error, records = fetch_records(port, topic, partition, offset)
    return error, [value for _offset, value in records]


def fetch_records(
    port: int, topic: str, partition: int, offset: int
) -> tuple[ErrorCode, list[tuple[int, bytes]]]:
    """Fetch from ``offset``: the error code and the (offset, value) of every
    record of the batches answered (the first may start before ``offset``)."""
    error, records = fetch_batches(port, topic, partition, offset)
    found: list[tuple[int, bytes]] = []
    pos = 0
    while pos + 12 <= len(records):
        size = int.from_bytes(records[pos + 8 : pos + 12], "big") + 12
        if pos + size > len(records):
            break  # a batch cut short by the size limit
        found += [(r.offset, r.value or b"") for r in decode_records(records[pos : pos + size])]
        pos += size
    return error, found


def fetch_batches(port: int, topic: str, partition: int, offset: int) -> tuple[ErrorCode, bytes]:
    """Fetch from ``offset``: the error code and the record batches as answered."""
    request = FetchRequest(
        cluster_id=None,
        replica_id=BrokerId(-1),
        max_wait=i32Timedelta.parse(timedelta(milliseconds=0)),
        min_bytes=i32(0),
        max_bytes=i32(1 << 20),
        isolation_level=cast(Any, 0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            FetchTopic(
                topic=TopicName(topic),
                partitions=(
                    FetchPartition(
                        partition=i32(partition),
                        current_leader_epoch=i32(-1),
                        fetch_offset=i64(offset),
                        last_fetched_epoch=i32(-1),
                        log_start_offset=i64(-1),
                        partition_max_bytes=i32(1 << 20),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )
    data = call_once(port, request, timeout=20).responses[0].partitions[0]
    return data.error_code, bytes(data.records or b"")


EARLIEST = -2


def list_offset(port: int, topic: str, partition: int, timestamp: int) -> tuple[ErrorCode, int]:
    """ListOffsets (-2: earliest, -1: latest); the error code and offset."""
    request = ListOffsetsRequest(
        replica_id=BrokerId(-1),
        isolation_level=i8(0),
        topics=(
            ListOffsetsTopic(
                name=TopicName(topic),
                partitions=(
                    ListOffsetsPartition(partition_index=i32(partition), timestamp=i64(timestamp)),
                ),
            ),
        ),
    )
    answer = call_once(port, request, timeout=20).topics[0].partitions[0]
    return answer.error_code, answer.offset
