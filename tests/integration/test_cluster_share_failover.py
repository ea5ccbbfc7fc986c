"""A share group in a cluster of three brokers: the share partition lives at
its topic partition's leader, its state at the share coordinator (the
leader of its key's `__share_group_state` partition), and each may die.

One test, two kills: the share coordinator's broker first, while a member
holds acquired records (its acknowledgements go on, through the new
coordinator), then the topic partition's leader. The new leader reads the
state the two coordinators wrote: no acknowledged record is delivered
again, every acquired and unacknowledged one is, its delivery count one
higher."""

from __future__ import annotations

import base64
import socket
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from cluster_brokers import SESSION_MS, create_topic, leaders, metadata, produce, running_cluster
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from kio.schema.share_acknowledge.v2 import ShareAcknowledgeRequest
from kio.schema.share_acknowledge.v2.request import (
    AcknowledgementBatch as AckBatch,
)
from kio.schema.share_acknowledge.v2.request import AcknowledgePartition, AcknowledgeTopic
from kio.schema.share_fetch.v2 import ShareFetchRequest
from kio.schema.share_fetch.v2.request import FetchPartition, FetchTopic
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import GroupId, i8, i32, i64

from raw_wire import call, call_once

ACCEPT = 1
TAKEOVER_S = SESSION_MS / 1000 + 20  # lease expiry, election, load; a loaded machine


class Member:
    """A share group member's share session at one broker, on its own connection."""

    def __init__(self, group: str, port: int, topic_id: uuid.UUID) -> None:
        self.group = group
        self.topic_id = topic_id
        self.member_id = str(uuid.uuid4())
        self.epoch = 0
        self.socket = socket.create_connection(("127.0.0.1", port), 60)

    def fetch(self, wait_ms: int = 500) -> Any:
        request = ShareFetchRequest(
            group_id=GroupId(self.group),
            member_id=self.member_id,
            share_session_epoch=i32(self.epoch),
            max_wait=i32Timedelta.parse(timedelta(milliseconds=wait_ms)),
            min_bytes=i32(1),
            max_bytes=i32(2**31 - 1),
            max_records=i32(500),
            batch_size=i32(500),
            is_renew_ack=False,
            topics=(
                FetchTopic(
                    topic_id=self.topic_id,
                    partitions=(
                        FetchPartition(partition_index=i32(0), acknowledgement_batches=()),
                    ),
                ),
            ),
            forgotten_topics_data=(),
        )
        self.epoch += 1
        return call(self.socket, request)[0]

    def acknowledge(self, first: int, last: int) -> ErrorCode:
        request = ShareAcknowledgeRequest(
            group_id=GroupId(self.group),
            member_id=self.member_id,
            share_session_epoch=i32(self.epoch),
            topics=(
                AcknowledgeTopic(
                    topic_id=self.topic_id,
                    partitions=(
                        AcknowledgePartition(
                            partition_index=i32(0),
                            acknowledgement_batches=(
                                AckBatch(
                                    first_offset=i64(first),
                                    last_offset=i64(last),
                                    acknowledge_types=(i8(ACCEPT),),
                                ),
                            ),
                        ),
                    ),
                ),
            ),
        )
        self.epoch += 1
        response = call(self.socket, request)[0]
        assert response.error_code is ErrorCode.none, response.error_message
        error: ErrorCode = response.responses[0].partitions[0].error_code
        return error

    def close(self) -> None:
        self.socket.close()


def acquired(response: Any) -> list[tuple[int, int, int]]:
    assert response.error_code is ErrorCode.none, response.error_message
    return [
        (r.first_offset, r.last_offset, r.delivery_count)
        for t in response.responses
        for p in t.partitions
        for r in p.acquired_records
    ]


def share_coordinator(port: int, group: str, topic_id: uuid.UUID) -> int:
    kafka_id = base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")
    request = FindCoordinatorRequest(key_type=i8(2), coordinator_keys=(f"{group}:{kafka_id}:0",))
    deadline = time.monotonic() + TAKEOVER_S
    while True:
        (found,) = call_once(port, request).coordinators
        if found.error_code is ErrorCode.none:
            return int(found.node_id)
        assert time.monotonic() < deadline, found.error_code
        time.sleep(0.2)


def new_leader(port: int, dead: int) -> int:
    deadline = time.monotonic() + TAKEOVER_S
    while True:
        leader = leaders(port, "t")[0]
        if leader != dead:
            return leader
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_acknowledged_records_survive_the_share_coordinator_and_the_leader(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 3) as brokers:
        port_of = {i + 1: b.port for i, b in enumerate(brokers)}
        assert create_topic(brokers[0].port, "t", 1) is ErrorCode.none
        topic_id: uuid.UUID = metadata(brokers[0].port, "t").topics[0].topic_id
        leader = leaders(brokers[0].port, "t")[0]
        # A group whose share coordinator is not the topic partition's leader.
        group = next(
            g
            for g in (f"g{i}" for i in range(100))
            if share_coordinator(brokers[0].port, g, topic_id) != leader
        )
        coordinator = share_coordinator(brokers[0].port, group, topic_id)

        member = Member(group, port_of[leader], topic_id)
        assert acquired(member.fetch(wait_ms=0)) == []  # it starts at the end: 0
        values = [f"r{i}".encode() for i in range(10)]
        assert produce(port_of[leader], "t", 0, *values)[0] is ErrorCode.none
        assert acquired(member.fetch()) == [(0, 9, 1)]
        assert member.acknowledge(0, 3) is ErrorCode.none

        brokers[coordinator - 1].kill()
        # Acknowledged once the new share coordinator has it.
        assert member.acknowledge(4, 5) is ErrorCode.none
        survivor = next(i for i in port_of if i not in (coordinator, leader))
        assert share_coordinator(port_of[survivor], group, topic_id) != coordinator

        brokers[leader - 1].kill()
        member.close()
        assert new_leader(port_of[survivor], leader) == survivor
        again = Member(group, port_of[survivor], topic_id)
        redelivered: list[tuple[int, int, int]] = []
        deadline = time.monotonic() + TAKEOVER_S
        while not redelivered and time.monotonic() < deadline:
            redelivered = acquired(again.fetch())
        again.close()
        # 0..5 acknowledged (4 and 5 through the second coordinator): never
        # again; 6..9 were acquired and not acknowledged: once more.
        assert redelivered == [(6, 9, 2)]
