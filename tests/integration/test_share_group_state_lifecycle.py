"""The group coordinator and the share coordinator, on a broker alone: a
share group's assigned partitions have their share state initialized at the
group epoch before the member fetches them (InitializeShareGroupState), and
DeleteShareGroupOffsets and DeleteGroups delete it (DeleteShareGroupState),
as Kafka 4.2's group coordinator does."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_brokers import create_topic, metadata
from kio.schema.delete_groups.v2 import DeleteGroupsRequest
from kio.schema.delete_share_group_offsets.v0 import DeleteShareGroupOffsetsRequest
from kio.schema.delete_share_group_offsets.v0.request import DeleteShareGroupOffsetsRequestTopic
from kio.schema.describe_share_group_offsets.v1 import DescribeShareGroupOffsetsRequest
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequestGroup,
)
from kio.schema.read_share_group_state_summary.v1 import ReadShareGroupStateSummaryRequest
from kio.schema.read_share_group_state_summary.v1 import request as summary_wire
from kio.schema.share_group_heartbeat.v1 import ShareGroupHeartbeatRequest

from kgroups.errors import ErrorCode
from kgroups.protocol.types import GroupId, TopicName, i32

from broker_thread import BrokerThread
from raw_wire import call_once

GROUP = "jobs"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data").start()
    try:
        yield b
    finally:
        b.stop()


def heartbeat(broker: BrokerThread, epoch: int, topics: tuple[str, ...] | None) -> Any:
    return call_once(
        broker.port,
        ShareGroupHeartbeatRequest(
            group_id=GroupId(GROUP),
            member_id="m1",
            member_epoch=i32(epoch),
            subscribed_topic_names=None if topics is None else tuple(TopicName(t) for t in topics),
        ),
    )


def summaries(broker: BrokerThread, topic_id: uuid.UUID) -> list[tuple[int, int]]:
    """(state epoch, start offset) of the group's share partitions 0 and 1."""
    request = ReadShareGroupStateSummaryRequest(
        group_id=GROUP,
        topics=(
            summary_wire.ReadStateSummaryData(
                topic_id=topic_id,
                partitions=tuple(
                    summary_wire.PartitionData(partition=i32(p), leader_epoch=i32(0))
                    for p in (0, 1)
                ),
            ),
        ),
    )
    (result,) = call_once(broker.port, request).results
    return [(int(p.state_epoch), int(p.start_offset)) for p in result.partitions]


def test_assigned_partitions_are_initialized_and_deleted_with_the_group(
    broker: BrokerThread,
) -> None:
    assert create_topic(broker.port, "t", 2) is ErrorCode.none
    topic_id: uuid.UUID = metadata(broker.port, "t").topics[0].topic_id
    assert summaries(broker, topic_id) == [(0, -1), (0, -1)]  # never initialized
    joined = heartbeat(broker, 0, ("t",))
    assert joined.error_code is ErrorCode.none
    # Initialized at the group epoch, to start where share.auto.offset.reset says.
    assert summaries(broker, topic_id) == [(1, -1), (1, -1)]
    # Described with every topic: the partitions the group coordinator initialized.
    described = call_once(
        broker.port,
        DescribeShareGroupOffsetsRequest(
            groups=(DescribeShareGroupOffsetsRequestGroup(group_id=GroupId(GROUP), topics=None),)
        ),
    )
    (topic,) = described.groups[0].topics
    assert [(p.partition_index, p.start_offset) for p in topic.partitions] == [(0, -1), (1, -1)]
    assert heartbeat(broker, -1, None).error_code is ErrorCode.none  # leaves
    deleted = call_once(broker.port, DeleteGroupsRequest(groups_names=(GroupId(GROUP),)))
    assert deleted.results[0].error_code is ErrorCode.none
    assert summaries(broker, topic_id) == [(0, -1), (0, -1)]


def test_delete_share_group_offsets_deletes_the_topics_state(broker: BrokerThread) -> None:
    assert create_topic(broker.port, "t", 2) is ErrorCode.none
    topic_id: uuid.UUID = metadata(broker.port, "t").topics[0].topic_id
    assert heartbeat(broker, 0, ("t",)).error_code is ErrorCode.none
    assert summaries(broker, topic_id) == [(1, -1), (1, -1)]
    assert heartbeat(broker, -1, None).error_code is ErrorCode.none
    request = DeleteShareGroupOffsetsRequest(
        group_id=GroupId(GROUP),
        topics=(DeleteShareGroupOffsetsRequestTopic(topic_name=TopicName("t")),),
    )
    answer = call_once(broker.port, request)
    assert answer.error_code is ErrorCode.none
    assert answer.responses[0].error_code is ErrorCode.none
    assert summaries(broker, topic_id) == [(0, -1), (0, -1)]
    # A member joining again has them initialized again, at the new group epoch.
    joined = heartbeat(broker, 0, ("t",))
    assert joined.error_code is ErrorCode.none
    assert summaries(broker, topic_id) == [(joined.member_epoch, -1)] * 2
