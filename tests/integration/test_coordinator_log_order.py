"""Coordinator records reach `__consumer_offsets` in the order they were applied.

A timer (session expiry, offset expiry) changes the coordinator's state at
once; if its records were appended later than a commit handled in the same
loop turn, a reload would replay them in the wrong order and differ from the
state the broker served before the restart.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from pathlib import Path
from typing import Any

import pytest
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.static.primitive import i32, i32Timedelta

from kgroups.client.admin import Admin
from kgroups.clock import ManualClock
from kgroups.config.broker_config import BrokerConfig
from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers import groups
from kgroups.handlers.fast_heartbeat import answer_heartbeat
from kgroups.protocol import apis
from kgroups.protocol.heartbeat_wire import heartbeat_answer
from kgroups.protocol.types import GroupId
from kgroups.runtime.context import RequestContext
from kgroups.server.broker import Broker

from group_requests import commit_request
from raw_wire import encode_request

RETENTION_MS = 60_000
SESSION_MS = 6_000


def _config(data: Path, **overrides: str) -> BrokerConfig:
    return BrokerConfig(
        {
            **{k.replace("_", "."): v for k, v in overrides.items()},
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data),
            "group.initial.rebalance.delay.ms": "0",
            # One partition: both groups share a shard and its timer.
            "offsets.topic.num.partitions": "1",
            "offsets.retention.minutes": "1",
            "offsets.retention.check.interval.ms": "1000",
        }
    )


def _ctx(api_key: int, version: int) -> RequestContext:
    return RequestContext(
        api_key=api_key, api_version=version, correlation_id=1, client_id="c", client_host="/h"
    )


def _join(group: str) -> JoinGroupRequest:
    timeout = i32Timedelta.parse(datetime.timedelta(milliseconds=SESSION_MS))
    return JoinGroupRequest(
        group_id=GroupId(group),
        session_timeout=timeout,
        rebalance_timeout=timeout,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
    )


async def _observed(broker: Broker) -> tuple[dict[Any, int], str, int]:
    """What a client sees: group g's offsets, group m's state and member count."""
    admin = Admin(f"127.0.0.1:{broker.port}")
    try:
        for _ in range(200):
            try:
                offsets = await admin.committed("g")
                described = await admin.describe("m")
                return offsets, described.group_state, len(described.members)
            except KafkaError as e:
                if e.error_code != ErrorCode.coordinator_load_in_progress:
                    raise
                await asyncio.sleep(0.02)
        raise AssertionError("the coordinator did not load")
    finally:
        await admin.close()


@pytest.mark.parametrize("fsync_every", ["1", str(2**63 - 1)])
def test_a_commit_in_the_turn_of_an_expiry_survives_a_restart(
    tmp_path: Path, fsync_every: str
) -> None:
    data = tmp_path / "data"
    clock = ManualClock()
    flush = {"log_flush_interval_messages": fsync_every}

    async def before_restart() -> tuple[dict[Any, int], str, int]:
        broker = Broker(_config(data, **flush), clock)
        await broker.start()
        try:
            broker.create_topic("t", 1, {})
            runtime = broker.coordinator
            commit_ctx = _ctx(apis.OFFSET_COMMIT, 9)
            await runtime.call(
                "g",
                commit_ctx,
                lambda s, c, now: s.offset_commit(commit_request("g", 5), c, now),
            )
            joined = await runtime.call(
                "m", _ctx(apis.JOIN_GROUP, 3), lambda s, c, now: s.join_group(_join("m"), c, now)
            )
            assert joined.error_code == ErrorCode.none
            # Member m's session and g's offset retention both run out; the
            # timer fires, and in the same loop turn g commits again.
            clock.advance(RETENTION_MS + SESSION_MS)
            runtime._fire(0)  # the shard's loop timer, as the loop would run it
            response = await runtime.call(
                "g",
                commit_ctx,
                lambda s, c, now: s.offset_commit(commit_request("g", 9), c, now),
            )
            assert response.topics[0].partitions[0].error_code == ErrorCode.none
            return await _observed(broker)
        finally:
            await broker.stop()

    async def after_restart() -> tuple[dict[Any, int], str, int]:
        broker = Broker(_config(data, **flush), clock)
        await broker.start()
        try:
            return await _observed(broker)
        finally:
            await broker.stop()

    live = asyncio.run(before_restart())
    assert live == ({("t", 0): 9}, "Empty", 0)
    assert asyncio.run(after_restart()) == live


def _heartbeat(group: str, member_id: str, generation: int) -> HeartbeatRequest:
    return HeartbeatRequest(
        group_id=GroupId(group),
        generation_id=i32(generation),
        member_id=member_id,
        group_instance_id=None,
    )


def _sync(group: str, member_id: str, generation: int) -> SyncGroupRequest:
    return SyncGroupRequest(
        group_id=GroupId(group),
        generation_id=i32(generation),
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=(SyncGroupRequestAssignment(member_id=member_id, assignment=b"a"),),
    )


def _fetch(group: str) -> OffsetFetchRequestGroup:
    return OffsetFetchRequestGroup(
        group_id=GroupId(group), member_id=None, member_epoch=i32(-1), topics=None
    )


def test_an_append_that_never_becomes_durable_times_out(tmp_path: Path) -> None:
    """offsets.commit.timeout.ms bounds every wait on a stuck fsync; replies
    that reveal none of the stuck state do not wait at all; the partition
    serves again once the fsync completes."""
    stuck: list[asyncio.Future[None]] = []

    async def scenario() -> None:
        broker = Broker(_config(tmp_path / "data", offsets_commit_timeout_ms="1000"))
        await broker.start()
        try:
            broker.create_topic("t", 1, {})
            runtime = broker.coordinator

            def call(group: str, api_key: int, version: int, method: str, request: Any) -> Any:
                return asyncio.ensure_future(
                    runtime.call(
                        group,
                        _ctx(api_key, version),
                        lambda s, c, now: getattr(s, method)(request, c, now),
                    )
                )

            def commit(offset: int) -> Any:
                return call(
                    "g", apis.OFFSET_COMMIT, 9, "offset_commit", commit_request("g", offset)
                )

            def heartbeat() -> Any:
                return call("m", apis.HEARTBEAT, 4, "heartbeat", beat)

            def error(task: Any) -> ErrorCode:
                failure = task.exception()
                assert isinstance(failure, KafkaError), failure
                return failure.error_code

            joined = await call("m", apis.JOIN_GROUP, 3, "join_group", _join("m"))
            member, generation = joined.member_id, joined.generation_id
            beat = _heartbeat("m", member, generation)
            await commit(5)

            def never_durable(topic: str, partition: int, plog: Any) -> asyncio.Future[None]:
                stuck.append(asyncio.get_running_loop().create_future())
                return stuck[-1]

            appended, broker.partitions.appended = broker.partitions.appended, never_durable  # type: ignore[method-assign]

            # A stuck commit of g: another group's heartbeat is answered at once;
            # reading g's offsets waits, then gives up like the commit.
            committing = commit(6)
            fetching = call("g", apis.OFFSET_FETCH, 9, "offset_fetch", _fetch("g"))
            assert (await asyncio.wait_for(heartbeat(), 0.9)).error_code == ErrorCode.none
            assert not committing.done() and not fetching.done()
            await asyncio.wait({committing, fetching}, timeout=10)
            assert error(committing) == ErrorCode.request_timed_out
            assert error(fetching) == ErrorCode.coordinator_not_available

            # A stuck assignment of m: its own heartbeat must wait for it.
            syncing = call("m", apis.SYNC_GROUP, 5, "sync_group", _sync("m", member, generation))
            beating = heartbeat()
            listing = asyncio.ensure_future(
                groups.list_groups(
                    broker,
                    _ctx(apis.LIST_GROUPS, 4),
                    ListGroupsRequest(states_filter=(), types_filter=()),
                )
            )
            await asyncio.wait({syncing, beating, listing}, timeout=10)
            assert listing.result().error_code == ErrorCode.coordinator_not_available
            assert error(syncing) == ErrorCode.rebalance_in_progress
            assert error(beating) == ErrorCode.coordinator_not_available
            assert stuck and not any(f.done() for f in stuck)

            broker.partitions.appended = appended  # type: ignore[method-assign]
            for f in stuck:
                f.set_result(None)
            response = await asyncio.wait_for(commit(7), 10)
            assert response.topics[0].partitions[0].error_code == ErrorCode.none
            assert (await asyncio.wait_for(heartbeat(), 10)).error_code == ErrorCode.none
            offsets = await _observed(broker)
            assert offsets[0] == {("t", 0): 7}
        finally:
            await broker.stop()

    asyncio.run(scenario())


def test_a_heartbeat_on_the_spot_answers_as_the_general_path_but_waits_behind_its_group_write(
    tmp_path: Path,
) -> None:
    """The connection answers a heartbeat without going through the driver
    only when nothing of its group waits for an fsync; then its answer is the
    one the general path gives."""
    stuck: list[asyncio.Future[None]] = []

    async def scenario() -> None:
        broker = Broker(_config(tmp_path / "data"))
        await broker.start()
        try:
            runtime = broker.coordinator

            def call(api_key: int, version: int, method: str, request: Any) -> Any:
                return runtime.call(
                    "m",
                    _ctx(api_key, version),
                    lambda s, c, now: getattr(s, method)(request, c, now),
                )

            joined = await call(apis.JOIN_GROUP, 3, "join_group", _join("m"))
            member, generation = joined.member_id, joined.generation_id
            synced = await call(apis.SYNC_GROUP, 5, "sync_group", _sync("m", member, generation))
            assert synced.error_code == ErrorCode.none
            for beat in (
                _heartbeat("m", member, generation),
                _heartbeat("m", member, generation + 1),
                _heartbeat("m", "someone-else", generation),
                _heartbeat("nobody", member, generation),
            ):
                on_the_spot = answer_heartbeat(runtime, encode_request(beat, correlation=9)[4:])
                general = await call(apis.HEARTBEAT, 4, "heartbeat", beat)
                assert on_the_spot == heartbeat_answer(4, 9, general.error_code)

            def never_durable(topic: str, partition: int, plog: Any) -> asyncio.Future[None]:
                stuck.append(asyncio.get_running_loop().create_future())
                return stuck[-1]

            # The member rejoins: a new generation, whose assignment the
            # SyncGroup stores. Until that write is durable, m's heartbeats wait.
            rejoined = await call(
                apis.JOIN_GROUP, 3, "join_group", dataclasses.replace(_join("m"), member_id=member)
            )
            assert rejoined.generation_id == generation + 1
            broker.partitions.appended = never_durable  # type: ignore[method-assign]
            syncing = asyncio.ensure_future(
                call(apis.SYNC_GROUP, 5, "sync_group", _sync("m", member, generation + 1))
            )
            await asyncio.sleep(0.05)
            assert stuck and not syncing.done()
            beat = encode_request(_heartbeat("m", member, generation + 1), correlation=9)[4:]
            assert answer_heartbeat(runtime, beat) is None
            other = encode_request(_heartbeat("g", "x", 1), correlation=9)[4:]
            assert answer_heartbeat(runtime, other) == heartbeat_answer(
                4, 9, ErrorCode.unknown_member_id
            )
            syncing.cancel()
        finally:
            for future in stuck:
                future.set_result(None)
            await broker.stop()

    asyncio.run(scenario())
