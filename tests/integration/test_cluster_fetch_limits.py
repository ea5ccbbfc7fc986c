"""In a cluster, batches older than a leader's memory tail are read from the
store; those reads keep to fetch.max.bytes as the in-memory ones do, with only
the first partition read allowed one whole batch beyond the limits (KIP-74)."""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from pathlib import Path

from cluster_brokers import create_topic, leaders, produce_batch, running_cluster
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

from kgroups.errors import ErrorCode
from kgroups.protocol.types import BrokerId, TopicName, i8, i32, i64
from kgroups.records.batch import encode_batch, iter_batches

from raw_wire import call

PARTITIONS = 4
BATCH_VALUE = 900_000
BATCHES = 6  # beyond the leader's 4 MiB memory tail: the first ones are read from the store
MAX_BYTES = 2_500_000  # two whole batches fit, the third does not


def test_store_reads_keep_to_fetch_max_bytes(tmp_path: Path, store_url: str) -> None:
    with running_cluster(tmp_path, store_url, 1, f"fetch.max.bytes={MAX_BYTES}") as (broker,):
        assert create_topic(broker.port, "old", PARTITIONS) == ErrorCode.none
        leaders(broker.port, "old")
        for p in range(PARTITIONS):
            for _ in range(BATCHES):
                batch = encode_batch([(b"k", os.urandom(BATCH_VALUE), (), 1)])
                assert produce_batch(broker.port, "old", p, batch)[0] == ErrorCode.none
        request = FetchRequest(
            replica_id=BrokerId(-1),
            max_wait=timedelta(0),
            min_bytes=i32(1),
            max_bytes=i32(2**31 - 1),
            isolation_level=i8(0),
            session_id=i32(0),
            session_epoch=i32(-1),
            topics=(
                FetchTopic(
                    topic=TopicName("old"),
                    partitions=tuple(
                        FetchPartition(
                            partition=i32(p),
                            current_leader_epoch=i32(-1),
                            fetch_offset=i64(0),
                            last_fetched_epoch=i32(-1),
                            log_start_offset=i64(-1),
                            partition_max_bytes=i32(2**31 - 1),
                        )
                        for p in range(PARTITIONS)
                    ),
                ),
            ),
            forgotten_topics_data=(),
            rack_id="",
        )
        with socket.create_connection(("127.0.0.1", broker.port), 30) as s:
            response, size = call(s, request)
    partitions = response.responses[0].partitions
    assert [p.error_code for p in partitions] == [ErrorCode.none] * PARTITIONS
    # The first partition takes two whole batches; the rest of the budget was set
    # aside for its read, so the others wait for the next fetch.
    assert [len(list(iter_batches(p.records or b""))) for p in partitions] == [2, 0, 0, 0]
    assert size < MAX_BYTES
