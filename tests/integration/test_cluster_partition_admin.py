"""CreatePartitions and DeleteRecords in a cluster of `kgroups serve`
processes on one PostgreSQL: new partitions get leaders at once and every
broker learns them; a log start moved by DeleteRecords is in the store, so
the next leader after a kill -9 starts from it."""

from __future__ import annotations

from pathlib import Path

from cluster_brokers import (
    EARLIEST,
    create_topic,
    fetch,
    leaders,
    list_offset,
    metadata,
    produce,
    running_cluster,
    wait_for,
)
from partition_admin_wire import create_partitions, delete_records

from kgroups.errors import ErrorCode

NONE = ErrorCode.none


def _count(port: int, topic: str) -> int:
    return len(metadata(port, topic).topics[0].partitions)


def test_partitions_added_and_records_deleted_across_a_failover(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 2) as brokers:
        ports = {1: brokers[0].port, 2: brokers[1].port}
        assert create_topic(ports[1], "orders", 2) == NONE
        leaders(ports[1], "orders")
        assert create_partitions(ports[1], {"orders": 5}) == [("orders", NONE, None)]
        # The broker that served it answers with the new partitions and their leaders
        # at once; the other learns them at its next turn.
        assert _count(ports[1], "orders") == 5
        led = leaders(ports[1], "orders")
        assert sorted(led) == [0, 1, 2, 3, 4]
        wait_for(lambda: _count(ports[2], "orders") == 5)
        assert produce(ports[led[4]], "orders", 4, b"new") == (NONE, 0)
        assert fetch(ports[led[4]], "orders", 4, 0) == (NONE, [b"new"])
        refused = create_partitions(ports[2], {"orders": 6}, assignments={"orders": [[1]]})
        assert refused[0][1] == ErrorCode.invalid_replica_assignment
        assert create_partitions(ports[2], {"orders": 5})[0][1] == ErrorCode.invalid_partitions

        leader = led[0]
        for value in (b"a", b"b", b"c", b"d"):
            assert produce(ports[leader], "orders", 0, value)[0] == NONE
        other = 3 - leader
        wrong = delete_records(ports[other], {("orders", 0): 2})
        assert wrong == {("orders", 0): (ErrorCode.not_leader_or_follower, -1)}
        beyond = delete_records(ports[leader], {("orders", 0): 9})
        assert beyond == {("orders", 0): (ErrorCode.offset_out_of_range, -1)}
        assert delete_records(ports[leader], {("orders", 0): 2}) == {("orders", 0): (NONE, 2)}
        assert list_offset(ports[leader], "orders", 0, EARLIEST) == (NONE, 2)
        assert fetch(ports[leader], "orders", 0, 1)[0] == ErrorCode.offset_out_of_range
        assert fetch(ports[leader], "orders", 0, 2) == (NONE, [b"c", b"d"])

        brokers[leader - 1].kill()  # kill -9: the other takes over once the lease runs out
        wait_for(lambda: leaders(ports[other], "orders")[0] == other, timeout=30)
        wait_for(lambda: list_offset(ports[other], "orders", 0, EARLIEST) == (NONE, 2))
        assert fetch(ports[other], "orders", 0, 1)[0] == ErrorCode.offset_out_of_range
        assert fetch(ports[other], "orders", 0, 2) == (NONE, [b"c", b"d"])
        assert delete_records(ports[other], {("orders", 0): -1}) == {("orders", 0): (NONE, 4)}
