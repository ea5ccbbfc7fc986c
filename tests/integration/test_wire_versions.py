"""Every version of every group API, spoken on the wire.

A member goes through a whole group lifecycle — join (with the KIP-394 second
join from v4), sync, heartbeat, commit, fetch, describe, list, leave — once per
version index, each API at that version clipped to the range the broker
serves. Older versions whose shape differs (LeaveGroup v0-v2, OffsetFetch
v1-v7, OffsetCommit v2-v4) are built in their own shape.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.schema.join_group.v9.request import JoinGroupRequestProtocol
from kio.schema.leave_group.v5.request import MemberIdentity
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kio.schema.sync_group.v5.request import SyncGroupRequestAssignment

from kgroups.client.connection import BrokerConnection
from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.types import GroupId, TopicName, i8, i32, i64
from kgroups.protocol.versions import build

from broker_thread import BrokerThread

SESSION = timedelta(seconds=10)
APIS = (
    apis.FIND_COORDINATOR,
    apis.JOIN_GROUP,
    apis.SYNC_GROUP,
    apis.HEARTBEAT,
    apis.OFFSET_COMMIT,
    apis.OFFSET_FETCH,
    apis.DESCRIBE_GROUPS,
    apis.LIST_GROUPS,
    apis.LEAVE_GROUP,
)


def _version(api_key: int, index: int) -> int:
    r = apis.SUPPORTED[api_key]
    return min(r.min_version + index, r.max_version)


def _request(api_key: int, version: int, **fields: Any) -> Any:
    return build(load_request_schema(api_key, version), **fields)


async def _lifecycle(bootstrap: str, index: int) -> None:
    host, port = bootstrap.split(":")
    conn = await BrokerConnection.open(host, int(port), client_id=f"v{index}")
    v = {key: _version(key, index) for key in APIS}
    group = f"group-{index}"

    async def send(api_key: int, **fields: Any) -> Any:
        return await conn.send(_request(api_key, v[api_key], **fields))

    found = await send(apis.FIND_COORDINATOR, key=group, key_type=i8(0), coordinator_keys=(group,))
    error = found.coordinators[0].error_code if v[apis.FIND_COORDINATOR] >= 4 else found.error_code
    assert error == ErrorCode.none

    join = {
        "group_id": GroupId(group),
        "session_timeout": SESSION,
        "rebalance_timeout": SESSION,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": (JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00"),),
    }
    joined = await send(apis.JOIN_GROUP, **join)
    if v[apis.JOIN_GROUP] >= 4:
        assert joined.error_code == ErrorCode.member_id_required
        joined = await send(apis.JOIN_GROUP, **{**join, "member_id": joined.member_id})
    assert joined.error_code == ErrorCode.none, (index, joined)
    member, generation = joined.member_id, joined.generation_id
    assert joined.leader == member and generation == 1

    synced = await send(
        apis.SYNC_GROUP,
        group_id=GroupId(group),
        generation_id=i32(generation),
        member_id=member,
        protocol_type="consumer",
        protocol_name="range",
        assignments=(SyncGroupRequestAssignment(member_id=member, assignment=b"a"),),
    )
    assert (synced.error_code, synced.assignment) == (ErrorCode.none, b"a")

    beat = await send(
        apis.HEARTBEAT, group_id=GroupId(group), generation_id=i32(generation), member_id=member
    )
    assert beat.error_code == ErrorCode.none

    committed = await send(
        apis.OFFSET_COMMIT,
        group_id=GroupId(group),
        generation_id_or_member_epoch=i32(generation),
        member_id=member,
        retention_time=timedelta(milliseconds=-1),
        topics=(
            OffsetCommitRequestTopic(
                name=TopicName("t"),
                partitions=(
                    OffsetCommitRequestPartition(
                        partition_index=i32(0),
                        committed_offset=i64(40 + index),
                        committed_leader_epoch=i32(-1),
                        committed_metadata="m",
                    ),
                ),
            ),
        ),
    )
    assert committed.topics[0].partitions[0].error_code == ErrorCode.none

    topics = (OffsetFetchRequestTopics(name=TopicName("t"), partition_indexes=(i32(0),)),)
    fetched = await send(
        apis.OFFSET_FETCH,
        group_id=GroupId(group),
        topics=topics,
        require_stable=False,
        groups=(
            OffsetFetchRequestGroup(
                group_id=GroupId(group), member_id=None, member_epoch=i32(-1), topics=topics
            ),
        ),
    )
    result = fetched.groups[0] if v[apis.OFFSET_FETCH] >= 8 else fetched
    partition = result.topics[0].partitions[0]
    assert (partition.committed_offset, partition.metadata) == (40 + index, "m")

    described = await send(
        apis.DESCRIBE_GROUPS, groups=(GroupId(group),), include_authorized_operations=False
    )
    d = described.groups[0]
    assert (d.error_code, d.group_state, d.protocol_data) == (ErrorCode.none, "Stable", "range")
    assert [m.member_id for m in d.members] == [member]

    listed = await send(apis.LIST_GROUPS, states_filter=(), types_filter=())
    assert group in [g.group_id for g in listed.groups]

    left = await send(
        apis.LEAVE_GROUP,
        group_id=GroupId(group),
        member_id=member,
        members=(MemberIdentity(member_id=member, group_instance_id=None),),
    )
    assert left.error_code == ErrorCode.none
    if v[apis.LEAVE_GROUP] >= 3:
        assert [(m.member_id, m.error_code) for m in left.members] == [(member, ErrorCode.none)]
    await conn.close()


@pytest.mark.parametrize("index", range(10))
def test_group_lifecycle_at_every_version(broker: BrokerThread, index: int) -> None:
    from kgroups.cli import main

    assert main(["topics", "create", "t", "--bootstrap-server", broker.bootstrap]) == 0
    broker.run(_lifecycle(broker.bootstrap, index))
