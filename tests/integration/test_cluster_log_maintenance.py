"""Retention, compaction and idempotent producers of partitions kept in the
cluster store, seen through the wire of real `kgroups serve` processes."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from cluster_brokers import (
    EARLIEST,
    create_topic,
    fetch,
    leaders,
    list_offset,
    produce,
    produce_batch,
    running_cluster,
    wait_for,
)

from kgroups.errors import ErrorCode
from kgroups.storage.records import encode_batch

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
