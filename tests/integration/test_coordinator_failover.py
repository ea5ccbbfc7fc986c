"""A group's `__consumer_offsets` partition moves away from a single broker and
back, through the hooks the cluster's leadership view calls: what clients see
on the wire meanwhile, and what the broker serves after the move.

Time is virtual: the broker's clock is a ManualClock and its loop's timers
follow that clock, so a session runs out only when the test says so.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.offset_fetch.v9.request import OffsetFetchRequest, OffsetFetchRequestGroup
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.static.primitive import i8, i32, i32Timedelta

from kgroups.clock import ManualClock
from kgroups.config.broker_config import BrokerConfig
from kgroups.errors import ErrorCode
from kgroups.handlers import find_coordinator, groups
from kgroups.protocol import apis
from kgroups.protocol.types import GroupId
from kgroups.runtime.context import RequestContext
from kgroups.runtime.coordinator_runtime import CoordinatorRuntime
from kgroups.server.broker import Broker
from kgroups.topics.placement import OFFSETS_TOPIC

from group_requests import commit_request

GROUP = GroupId("g")
SESSION_MS = 6_000


def _ctx(api_key: int, version: int) -> RequestContext:
    return RequestContext(
        api_key=api_key, api_version=version, correlation_id=1, client_id="c", client_host="/h"
    )


def run(data: Path, scenario: Callable[[Broker, ManualClock], Awaitable[None]]) -> None:
    """A broker alone, on virtual time, with one `__consumer_offsets` partition."""
    clock = ManualClock()
    config = BrokerConfig(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data),
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "1",
        }
    )

    async def main() -> None:
        loop = asyncio.get_running_loop()
        start = clock.now_ms()
        loop.time = lambda: (clock.now_ms() - start) / 1000  # type: ignore[method-assign]
        broker = Broker(config, clock)
        await broker.start()
        try:
            broker.create_topic("t", 1, {})
            await scenario(broker, clock)
        finally:
            await broker.stop()

    asyncio.run(main())


async def turns(n: int = 20) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def settled(real_s: float = 0.05) -> None:
    """Loop turns for a little real time (the loop's own time stands still),
    so that fsyncs in threads come back."""
    until = time.monotonic() + real_s
    while time.monotonic() < until:
        await asyncio.sleep(0)


async def loaded(runtime: CoordinatorRuntime) -> None:
    until = time.monotonic() + 10
    while time.monotonic() < until:
        if runtime.loaded_partitions() == [0]:
            return
        await asyncio.sleep(0)
    raise AssertionError("the partition did not load")


def join(member_id: str = "") -> JoinGroupRequest:
    timeout = i32Timedelta.parse(datetime.timedelta(milliseconds=SESSION_MS))
    return JoinGroupRequest(
        group_id=GROUP,
        session_timeout=timeout,
        rebalance_timeout=timeout,
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
    )


async def joined_member(broker: Broker) -> tuple[str, int]:
    """A member that joined and synced group g: its id and generation."""
    joined = await groups.join_group(broker, _ctx(apis.JOIN_GROUP, 9), join())
    if joined.error_code == ErrorCode.member_id_required:
        joined = await groups.join_group(broker, _ctx(apis.JOIN_GROUP, 9), join(joined.member_id))
    assert joined.error_code == ErrorCode.none
    member, generation = joined.member_id, joined.generation_id
    synced = await groups.sync_group(
        broker,
        _ctx(apis.SYNC_GROUP, 5),
        SyncGroupRequest(
            group_id=GROUP,
            generation_id=i32(generation),
            member_id=member,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=(SyncGroupRequestAssignment(member_id=member, assignment=b"a"),),
        ),
    )
    assert synced.error_code == ErrorCode.none
    return member, generation


async def heartbeat(broker: Broker, member: str, generation: int) -> ErrorCode:
    response = await groups.heartbeat(
        broker,
        _ctx(apis.HEARTBEAT, 4),
        HeartbeatRequest(
            group_id=GROUP, generation_id=i32(generation), member_id=member, group_instance_id=None
        ),
    )
    error: ErrorCode = response.error_code
    return error


async def members(broker: Broker) -> tuple[str, int]:
    response = await groups.describe_groups(
        broker,
        _ctx(apis.DESCRIBE_GROUPS, 5),
        DescribeGroupsRequest(groups=(GROUP,), include_authorized_operations=False),
    )
    (group,) = response.groups
    assert group.error_code == ErrorCode.none
    return group.group_state, len(group.members)


async def committed(broker: Broker) -> tuple[ErrorCode, list[int]]:
    response = await groups.offset_fetch(
        broker,
        _ctx(apis.OFFSET_FETCH, 9),
        OffsetFetchRequest(
            groups=(OffsetFetchRequestGroup(group_id=GROUP, member_id=None, topics=None),),
            require_stable=False,
        ),
    )
    (group,) = response.groups
    return group.error_code, [p.committed_offset for t in group.topics for p in t.partitions]


async def commit(broker: Broker, offset: int) -> ErrorCode:
    response = await groups.offset_commit(
        broker, _ctx(apis.OFFSET_COMMIT, 9), commit_request(GROUP, offset)
    )
    error: ErrorCode = response.topics[0].partitions[0].error_code
    return error


async def find(broker: Broker) -> tuple[ErrorCode, int, int]:
    response = await find_coordinator.handle(
        broker,
        _ctx(apis.FIND_COORDINATOR, 4),
        FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(GROUP,)),
    )
    (found,) = response.coordinators  # type: ignore[union-attr]
    return found.error_code, found.node_id, found.port


def offsets_log_end(broker: Broker) -> int:
    return broker.partitions.log(OFFSETS_TOPIC, 0).log_end_offset


def test_a_parked_join_is_told_not_coordinator_and_clients_find_the_coordinator_again(
    tmp_path: Path,
) -> None:
    async def scenario(broker: Broker, clock: ManualClock) -> None:
        runtime = broker.coordinator
        member, generation = await joined_member(broker)
        # A second member's join waits for the first to rejoin.
        first = await groups.join_group(broker, _ctx(apis.JOIN_GROUP, 9), join())
        assert first.error_code == ErrorCode.member_id_required
        parked = asyncio.ensure_future(
            groups.join_group(broker, _ctx(apis.JOIN_GROUP, 9), join(first.member_id))
        )
        await turns()
        assert not parked.done()
        runtime.partition_lost(0)
        await turns()
        assert parked.result().error_code == ErrorCode.not_coordinator
        assert await heartbeat(broker, member, generation) == ErrorCode.not_coordinator
        assert await commit(broker, 5) == ErrorCode.not_coordinator
        assert (await find(broker))[0] == ErrorCode.coordinator_not_available  # no leader
        runtime.partition_gained(0, 1)
        assert await find(broker) == (ErrorCode.none, broker.broker_id, broker.port)
        await loaded(runtime)
        assert await heartbeat(broker, member, generation) == ErrorCode.none

    run(tmp_path / "data", scenario)


def test_commits_acknowledged_before_the_loss_are_there_after_the_regain(tmp_path: Path) -> None:
    async def scenario(broker: Broker, clock: ManualClock) -> None:
        runtime = broker.coordinator
        for offset in (3, 5):
            assert await commit(broker, offset) == ErrorCode.none
        runtime.partition_lost(0)
        runtime.partition_gained(0, 1)
        await loaded(runtime)
        assert await committed(broker) == (ErrorCode.none, [5])
        runtime.partition_lost(0)  # and once more, at another epoch
        runtime.partition_gained(0, 2)
        await loaded(runtime)
        assert await committed(broker) == (ErrorCode.none, [5])

    run(tmp_path / "data", scenario)


def test_no_timer_fires_for_a_lost_partition_and_a_reloaded_member_gets_a_fresh_session(
    tmp_path: Path,
) -> None:
    async def scenario(broker: Broker, clock: ManualClock) -> None:
        runtime = broker.coordinator
        member, generation = await joined_member(broker)
        runtime.partition_lost(0)
        written = offsets_log_end(broker)
        clock.advance(3 * SESSION_MS)  # its session runs out while the partition is away
        await settled()
        assert offsets_log_end(broker) == written  # nobody expired it: nothing written

        runtime.partition_gained(0, 1)
        await loaded(runtime)
        assert await members(broker) == ("Stable", 1)
        clock.advance(SESSION_MS - 1)  # a fresh session, from the load
        await turns()
        assert await members(broker) == ("Stable", 1)
        assert await heartbeat(broker, member, generation) == ErrorCode.none
        clock.advance(SESSION_MS)  # then silent for a whole session: removed
        await settled()
        assert await members(broker) == ("Empty", 0)

    run(tmp_path / "data", scenario)


def test_a_request_during_the_reload_gets_coordinator_load_in_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scan = CoordinatorRuntime._scan
    held: list[asyncio.Future[None]] = []

    async def held_scan(self: CoordinatorRuntime, partition: int) -> Any:
        if held:
            await held[0]
        return await scan(self, partition)

    monkeypatch.setattr(CoordinatorRuntime, "_scan", held_scan)

    async def scenario(broker: Broker, clock: ManualClock) -> None:
        runtime = broker.coordinator
        assert await commit(broker, 5) == ErrorCode.none
        held.append(asyncio.get_running_loop().create_future())
        runtime.partition_lost(0)
        runtime.partition_gained(0, 1)
        assert await commit(broker, 6) == ErrorCode.coordinator_load_in_progress
        assert (await committed(broker))[0] == ErrorCode.coordinator_load_in_progress
        held[0].set_result(None)
        await loaded(runtime)
        assert await committed(broker) == (ErrorCode.none, [5])

    run(tmp_path / "data", scenario)
