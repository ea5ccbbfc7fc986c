"""Retention, compaction and idempotent producers of partitions kept in the
cluster store, seen through the wire of real `kgroups serve` processes."""

from __future__ import annotations

import signal
import time
from datetime import timedelta
from pathlib import Path

from cluster_brokers import (
    EARLIEST,
    SESSION_MS,
    create_topic,
    fetch,
    leaders,
    list_offset,
    produce,
    produce_batch,
    running_cluster,
    wait_for,
)
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import ProducerId, i16
from kgroups.records.batch import encode_batch

from raw_wire import call_once

HOUR_MS = 3_600_000


def test_retention_moves_the_log_start_and_every_leader_after_it_sees_it(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 2, "log.retention.check.interval.ms=200") as brokers:
        ports = {1: brokers[0].port, 2: brokers[1].port}
        assert create_topic(ports[1], "short", 1, retention_ms=str(HOUR_MS)) == ErrorCode.none
        leader = leaders(ports[1], "short")[0]
        old = int(time.time() * 1000) - 2 * HOUR_MS
        assert produce(ports[leader], "short", 0, b"a", b"b", timestamp=old) == (ErrorCode.none, 0)
        assert produce(ports[leader], "short", 0, b"c") == (ErrorCode.none, 2)
        # The two-hour-old batch expires; the fresh one stays.
        wait_for(lambda: list_offset(ports[leader], "short", 0, EARLIEST) == (ErrorCode.none, 2))
        assert fetch(ports[leader], "short", 0, 0)[0] == ErrorCode.offset_out_of_range
        assert fetch(ports[leader], "short", 0, 2) == (ErrorCode.none, [b"c"])
        # The next leader starts from the store's log start.
        brokers[leader - 1].proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
        other = 3 - leader
        wait_for(lambda: leaders(ports[other], "short")[0] == other)
        wait_for(lambda: list_offset(ports[other], "short", 0, EARLIEST) == (ErrorCode.none, 2))
        assert fetch(ports[other], "short", 0, 2) == (ErrorCode.none, [b"c"])
        assert fetch(ports[other], "short", 0, 1)[0] == ErrorCode.offset_out_of_range


def test_the_leader_compacts_a_compacted_topic_in_the_store(tmp_path: Path, store_url: str) -> None:
    with running_cluster(tmp_path, store_url, 1, "log.cleaner.backoff.ms=200") as (broker,):
        config = {"cleanup_policy": "compact", "segment_bytes": "100"}
        assert create_topic(broker.port, "keyed", 1, **config) == ErrorCode.none
        leaders(broker.port, "keyed")
        now = int(time.time() * 1000)
        for i in range(10):
            batch = encode_batch([(b"k%d" % (i % 2), b"v%d" % i, (), now)])
            assert produce_batch(broker.port, "keyed", 0, batch) == (ErrorCode.none, i)
        # The newest 100 bytes (two batches) are the active part, never compacted;
        # below them, the newest value of each key stays.
        expected = (ErrorCode.none, [b"v6", b"v7", b"v8", b"v9"])
        wait_for(lambda: fetch(broker.port, "keyed", 0, 0) == expected)


def _producer_id(port: int) -> int:
    response = call_once(
        port,
        InitProducerIdRequest(
            transactional_id=None,
            transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
        ),
    )
    assert response.error_code == ErrorCode.none
    return int(response.producer_id)


def test_a_retry_to_the_next_leader_after_kill_9_is_a_duplicate_not_a_second_write(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 2) as brokers:
        ports = {1: brokers[0].port, 2: brokers[1].port}
        assert create_topic(ports[1], "idem", 1) == ErrorCode.none
        leader = leaders(ports[1], "idem")[0]
        other = 3 - leader
        pid = _producer_id(ports[leader])
        now = int(time.time() * 1000)

        def batch(sequence: int, *values: bytes) -> bytes:
            records = [(None, v, (), now) for v in values]
            return encode_batch(records, producer_id=pid, producer_epoch=0, base_sequence=sequence)

        assert produce(ports[leader], "idem", 0, b"x") == (ErrorCode.none, 0)
        first, second = batch(0, b"a", b"b"), batch(2, b"c")
        assert produce_batch(ports[leader], "idem", 0, first) == (ErrorCode.none, 1)
        assert produce_batch(ports[leader], "idem", 0, second) == (ErrorCode.none, 3)
        brokers[leader - 1].kill()
        wait_for(lambda: leaders(ports[other], "idem")[0] == other, SESSION_MS / 1000 + 10)
        # Both acknowledged batches, retried: answered with their offsets, not written.
        assert produce_batch(ports[other], "idem", 0, second) == (ErrorCode.none, 3)
        assert produce_batch(ports[other], "idem", 0, first) == (ErrorCode.none, 1)
        # The sequence carries on where it was; a gap is out of order, as in Kafka.
        gap = produce_batch(ports[other], "idem", 0, batch(5, b"e"))
        assert gap[0] == ErrorCode.out_of_order_sequence_number
        assert produce_batch(ports[other], "idem", 0, batch(3, b"d")) == (ErrorCode.none, 4)
        assert fetch(ports[other], "idem", 0, 0) == (ErrorCode.none, [b"x", b"a", b"b", b"c", b"d"])
