"""Brokers in cluster mode (`cluster.store.url`): real `kgroups serve` processes
sharing one PostgreSQL database, seen through the wire."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from cluster_brokers import (
    create_topic,
    fetch,
    leaders,
    metadata,
    produce,
    running_cluster,
    wait_for,
)

from kgroups.errors import ErrorCode


def test_a_topic_created_through_one_broker_is_seen_by_every_broker(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 2) as (a, b):
        assert create_topic(a.port, "spread", 4) == ErrorCode.none
        by_a = leaders(a.port, "spread")
        wait_for(lambda: Counter(leaders(b.port, "spread").values()) == Counter({1: 2, 2: 2}))
        seen_a = metadata(a.port, "spread")
        seen_b = metadata(b.port, "spread")
        assert seen_a.topics[0].topic_id == seen_b.topics[0].topic_id
        assert seen_a.topics[0].topic_id.int != 0
        assert sorted(x.node_id for x in seen_b.brokers) == [1, 2]
        assert {x.node_id: x.port for x in seen_a.brokers} == {1: a.port, 2: b.port}
        assert set(by_a) == {0, 1, 2, 3}
        # A second creation through the other broker is refused.
        assert create_topic(b.port, "spread", 1) == ErrorCode.topic_already_exists


def test_only_the_leader_takes_writes_and_reads_of_a_partition(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 2) as brokers:
        ports = {1: brokers[0].port, 2: brokers[1].port}
        assert create_topic(ports[1], "t", 2) == ErrorCode.none
        wait_for(lambda: set(leaders(ports[1], "t").values()) == {1, 2})
        wait_for(lambda: leaders(ports[2], "t") == leaders(ports[1], "t"))
        for partition, leader in leaders(ports[1], "t").items():
            other = ports[3 - leader]
            # A stale view may still be catching up: the leader answers once it knows.
            port = ports[leader]
            wait_for(lambda p=partition, at=port: produce(at, "t", p, b"x")[0] == ErrorCode.none)
            assert produce(other, "t", partition, b"y")[0] == ErrorCode.not_leader_or_follower
            assert fetch(other, "t", partition, 0)[0] == ErrorCode.not_leader_or_follower
            error, base = produce(ports[leader], "t", partition, b"a", b"b")
            assert error == ErrorCode.none
            assert fetch(ports[leader], "t", partition, base) == (ErrorCode.none, [b"a", b"b"])
