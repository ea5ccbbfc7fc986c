"""A broker whose partition has moved to another broker, before its next read
of the store shows it, must not answer a producer from its stale producer
state: an OUT_OF_ORDER_SEQUENCE_NUMBER from it is fatal for librdkafka's
idempotent producer, though the producer did nothing wrong; nor tell a
consumer that an offset the new leader has written is out of range. It checks
with the store first and answers NOT_LEADER_OR_FOLLOWER, which clients retry
at the new leader."""

from __future__ import annotations

import time
from pathlib import Path

from cluster_brokers import (
    cluster_broker,
    create_topic,
    fetch,
    leaders,
    produce_batch,
    wait_for,
)

from kgroups.errors import ErrorCode
from kgroups.records.batch import encode_batch

PID = 4242


def _batch(sequence: int) -> bytes:
    now = int(time.time() * 1000)
    return encode_batch(
        [(None, f"r{sequence}".encode(), (), now)],
        producer_id=PID,
        producer_epoch=0,
        base_sequence=sequence,
    )


def test_a_moved_partition_is_not_answered_from_stale_producer_state(
    tmp_path: Path, store_url: str
) -> None:
    # The first broker reads the store rarely: its view stays stale for seconds
    # after the second broker joins and takes some of its partitions.
    first = cluster_broker(
        tmp_path,
        store_url,
        1,
        "broker.heartbeat.interval.ms=3000",
        "broker.session.timeout.ms=60000",
    )
    second = cluster_broker(tmp_path, store_url, 2)
    try:
        first.start()
        assert create_topic(first.port, "t", 2) == ErrorCode.none
        wait_for(lambda: leaders(first.port, "t") == {0: 1, 1: 1})
        for sequence in range(2):
            assert produce_batch(first.port, "t", 1, _batch(sequence))[0] == ErrorCode.none
        second.start()
        wait_for(lambda: leaders(second.port, "t")[1] == 2, timeout=30)
        # The producer follows the new leader, which knows its sequences...
        wait_for(lambda: produce_batch(second.port, "t", 1, _batch(2))[0] == ErrorCode.none)
        # A consumer with stale metadata: past the old leader's end is not out
        # of range (the consumer would reset its position), only elsewhere.
        assert fetch(first.port, "t", 1, 3)[0] == ErrorCode.not_leader_or_follower
        # ...and the producer's stale metadata sends its next batch to the old one.
        error, _offset = produce_batch(first.port, "t", 1, _batch(3))
        assert error == ErrorCode.not_leader_or_follower
    finally:
        second.stop()
        first.stop()
