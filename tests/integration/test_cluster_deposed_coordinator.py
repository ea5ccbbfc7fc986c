"""A group coordinator whose `__consumer_offsets` partition moved to a broker
that (re)joined must not answer from what it held before: between the move
and its next read of the store it still believes it leads, and an
OffsetFetch answered from its memory then misses the commits its successor
took (exactly-once consumers restart from such offsets and process input
twice). It must answer NOT_COORDINATOR, as any broker that does not lead."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from cluster_brokers import cluster_broker, create_topic, leaders, metadata, wait_for
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from txn_offsets_wire import fetch

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8

from group_requests import commit_request
from raw_wire import call_once

OFFSETS_PARTITIONS = 6
# A long heartbeat widens the window in which a deposed leader has not yet
# read that it was deposed.
SLOW = ("broker.heartbeat.interval.ms=2500", "broker.session.timeout.ms=8000")


def _coordinator(port: int, group: str) -> int:
    answer = call_once(port, FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(group,)))
    (found,) = answer.coordinators
    return int(found.node_id) if found.error_code == ErrorCode.none else -1


def _commit(port: int, group: str, offset: int) -> ErrorCode:
    answer = call_once(port, commit_request(group, offset))
    return ErrorCode(answer.topics[0].partitions[0].error_code)


def test_a_deposed_coordinator_does_not_answer_offset_fetch_from_memory(
    tmp_path: Path, store_url: str
) -> None:
    overrides = (*SLOW, f"offsets.topic.num.partitions={OFFSETS_PARTITIONS}")
    brokers = [cluster_broker(tmp_path, store_url, i, *overrides) for i in (1, 2, 3)]
    try:
        for b in brokers[:2]:
            b.start()
        port = brokers[0].port
        wait_for(lambda: len(metadata(port).brokers) == 2)
        assert create_topic(port, "t", 1) == ErrorCode.none
        leaders(port, "t")
        groups = [f"g{i}" for i in range(24)]  # every offsets partition, likely
        before = {}
        for g in groups:
            wait_for(lambda g=g: _coordinator(port, g) in (1, 2), timeout=30)
            before[g] = _coordinator(port, g)
            at = brokers[before[g] - 1].port
            wait_for(lambda g=g, at=at: _commit(at, g, 5) == ErrorCode.none, timeout=30)

        brokers[2].start()  # the spread moves some offsets partitions to it
        new = brokers[2].port
        deadline = time.monotonic() + 30
        moved: list[str] = []
        while not moved:
            assert time.monotonic() < deadline, "no offsets partition moved to broker 3"
            moved = [g for g in groups if _coordinator(new, g) == 3]
        group = moved[0]
        old = brokers[before[group] - 1]
        wait_for(lambda: _commit(new, group, 9) == ErrorCode.none, timeout=10)

        with socket.create_connection(("127.0.0.1", old.port), timeout=30) as s:
            error, offsets = fetch(s, group, {"t": [0]})
        offset, partition_error = offsets[("t", 0)]
        assert ErrorCode.not_coordinator in (error, partition_error) or offset == 9, (
            f"the deposed coordinator answered {offset} ({error}, {partition_error})"
        )
    finally:
        for b in brokers:
            b.stop()
