"""What each group API answers while the group's `__consumer_offsets` partition
loads, as Kafka 3.x's GroupCoordinator answers: JoinGroup and everything that
reads or changes stored state get COORDINATOR_LOAD_IN_PROGRESS; SyncGroup gets
REBALANCE_IN_PROGRESS (the rebalance in flight was lost: rejoin) and Heartbeat
NONE (the member keeps its session until the group is known).

The load is held at its scan, so the partition stays loading for as long as
the test needs.
"""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from typing import Any

import pytest
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.leave_group.v5.request import LeaveGroupRequest, MemberIdentity
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.offset_commit.v9.request import OffsetCommitRequest
from kio.schema.offset_delete.v0.request import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from kio.schema.offset_fetch.v9.request import OffsetFetchRequest, OffsetFetchRequestGroup
from kio.schema.sync_group.v5.request import SyncGroupRequest
from kio.static.primitive import i32, i32Timedelta

from kgroups.config.broker_config import BrokerConfig
from kgroups.errors import ErrorCode
from kgroups.handlers import groups
from kgroups.protocol import apis
from kgroups.protocol.types import GroupId, TopicName
from kgroups.runtime.context import RequestContext
from kgroups.runtime.coordinator_runtime import CoordinatorRuntime
from kgroups.server.broker import Broker

from group_requests import commit_request

GROUP = GroupId("g")
LOADING = ErrorCode.coordinator_load_in_progress


def _config(data: Path) -> BrokerConfig:
    return BrokerConfig(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data),
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "1",
        }
    )


def _ctx(api_key: int, version: int) -> RequestContext:
    return RequestContext(
        api_key=api_key, api_version=version, correlation_id=1, client_id="c", client_host="/h"
    )


def _join() -> JoinGroupRequest:
    timeout = i32Timedelta.parse(datetime.timedelta(seconds=10))
    return JoinGroupRequest(
        group_id=GROUP,
        session_timeout=timeout,
        rebalance_timeout=timeout,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
    )


def _commit() -> OffsetCommitRequest:
    return commit_request(GROUP, 7)


def _fetch() -> OffsetFetchRequest:
    return OffsetFetchRequest(
        groups=(OffsetFetchRequestGroup(group_id=GROUP, member_id=None, topics=None),),
        require_stable=False,
    )


async def _answers(broker: Broker) -> dict[str, Any]:
    """Every group API's error code(s) for group g."""
    join = await groups.join_group(broker, _ctx(apis.JOIN_GROUP, 9), _join())
    sync = await groups.sync_group(
        broker,
        _ctx(apis.SYNC_GROUP, 5),
        SyncGroupRequest(
            group_id=GROUP,
            generation_id=i32(1),
            member_id="m",
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=(),
        ),
    )
    heartbeat = await groups.heartbeat(
        broker,
        _ctx(apis.HEARTBEAT, 4),
        HeartbeatRequest(
            group_id=GROUP, generation_id=i32(1), member_id="m", group_instance_id=None
        ),
    )
    leave = await groups.leave_group(
        broker,
        _ctx(apis.LEAVE_GROUP, 5),
        LeaveGroupRequest(
            group_id=GROUP, members=(MemberIdentity(member_id="m", group_instance_id=None),)
        ),
    )
    commit = await groups.offset_commit(broker, _ctx(apis.OFFSET_COMMIT, 9), _commit())
    fetch = await groups.offset_fetch(broker, _ctx(apis.OFFSET_FETCH, 9), _fetch())
    describe = await groups.describe_groups(
        broker,
        _ctx(apis.DESCRIBE_GROUPS, 5),
        DescribeGroupsRequest(groups=(GROUP,), include_authorized_operations=False),
    )
    listed = await groups.list_groups(
        broker, _ctx(apis.LIST_GROUPS, 4), ListGroupsRequest(states_filter=(), types_filter=())
    )
    offset_delete = await groups.offset_delete(
        broker,
        _ctx(apis.OFFSET_DELETE, 0),
        OffsetDeleteRequest(
            group_id=GROUP,
            topics=(
                OffsetDeleteRequestTopic(
                    name=TopicName("t"),
                    partitions=(OffsetDeleteRequestPartition(partition_index=i32(0)),),
                ),
            ),
        ),
    )
    delete = await groups.delete_groups(
        broker, _ctx(apis.DELETE_GROUPS, 2), DeleteGroupsRequest(groups_names=(GROUP,))
    )
    return {
        "JoinGroup": join.error_code,
        "SyncGroup": sync.error_code,
        "Heartbeat": heartbeat.error_code,
        "LeaveGroup": leave.error_code,
        "OffsetCommit": [p.error_code for t in commit.topics for p in t.partitions],
        "OffsetFetch": fetch.groups[0].error_code,
        "DescribeGroups": [g.error_code for g in describe.groups],
        "ListGroups": listed.error_code,
        "OffsetDelete": offset_delete.error_code,
        "DeleteGroups": [r.error_code for r in delete.results],
    }


def test_each_group_api_answers_as_kafka_while_its_partition_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    scan = CoordinatorRuntime._scan
    held: asyncio.Future[None] | None = None

    async def held_scan(self: CoordinatorRuntime, partition: int) -> Any:
        if held is not None:
            await held
        return await scan(self, partition)

    monkeypatch.setattr(CoordinatorRuntime, "_scan", held_scan)

    async def scenario() -> None:
        nonlocal held
        broker = Broker(_config(data))
        await broker.start()
        try:  # a first run stores group g's offset
            broker.create_topic("t", 1, {})
            commit = await groups.offset_commit(broker, _ctx(apis.OFFSET_COMMIT, 9), _commit())
            assert commit.topics[0].partitions[0].error_code == ErrorCode.none
        finally:
            await broker.stop()

        held = asyncio.get_running_loop().create_future()
        broker = Broker(_config(data))
        await broker.start()
        try:
            assert await _answers(broker) == {
                "JoinGroup": LOADING,
                "SyncGroup": ErrorCode.rebalance_in_progress,
                "Heartbeat": ErrorCode.none,
                "LeaveGroup": LOADING,
                "OffsetCommit": [LOADING],
                "OffsetFetch": LOADING,
                "DescribeGroups": [LOADING],
                "ListGroups": LOADING,
                "OffsetDelete": LOADING,
                "DeleteGroups": [LOADING],
            }
            held.set_result(None)
            for _ in range(200):  # loaded: the stored offset is served again
                fetch = await groups.offset_fetch(broker, _ctx(apis.OFFSET_FETCH, 9), _fetch())
                if fetch.groups[0].error_code != LOADING:
                    break
                await asyncio.sleep(0.01)
            (group,) = fetch.groups
            assert group.error_code == ErrorCode.none
            assert [p.committed_offset for t in group.topics for p in t.partitions] == [7]
        finally:
            if not held.done():
                held.set_result(None)
            await broker.stop()

    asyncio.run(scenario())
