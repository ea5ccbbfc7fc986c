"""The coordinator's IO shell against a fake `__consumer_offsets` log, on
virtual time: what it appends, when a reply leaves, what a failed or stuck
append answers, and that timers fire."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.static.primitive import i32, i32Timedelta

from kgroups.clock import ManualClock
from kgroups.config.broker_config import BrokerConfig
from kgroups.config.dynamic_configs import DynamicConfigs
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.types import GroupId
from kgroups.records.batch import encode_batch, iter_key_values
from kgroups.runtime.context import RequestContext
from kgroups.runtime.coordinator_runtime import CoordinatorRuntime
from kgroups.runtime.faults import Faults
from kgroups.share_partitions import SharePartitionConfig
from kgroups.share_partitions.manager import SharePartitionManager
from kgroups.topics.placement import OFFSETS_TOPIC

from group_requests import commit_request

COMMIT_TIMEOUT_MS = 5_000
SESSION_MS = 10_000


class FakeLog:
    """A partition that keeps what is appended; it can refuse an append."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []
        self.refuse: OSError | KafkaError | None = None

    def append_batch(self, batch: bytes, now: int) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.records.extend((k, v) for k, v in iter_key_values(batch) if k is not None)

    # What loading reads: one record per offset.
    log_start_offset = 0

    @property
    def log_end_offset(self) -> int:
        return len(self.records)

    def read(self, offset: int, max_bytes: int, max_offset: int) -> bytes:
        records = [(k, v, (), 0) for k, v in self.records[offset:max_offset]]
        return encode_batch(records, base_offset=offset) if records else b""


class FakeTopics:
    def get(self, name: str) -> Any:
        return object() if name == OFFSETS_TOPIC and self.created else None

    def partition_exists(self, topic: str, partition: int) -> bool:
        return topic == "t" and partition == 0

    created = False


class FakeBroker:
    """What the runtime uses of a broker: config, clock, topics, one log and
    its fsyncs, which complete only when the test says so."""

    def __init__(self) -> None:
        self.config = BrokerConfig(
            {
                "offsets.topic.num.partitions": "1",
                "offsets.commit.timeout.ms": str(COMMIT_TIMEOUT_MS),
                "group.initial.rebalance.delay.ms": "0",
            }
        )
        self.clock = ManualClock()
        self.cluster = None  # a broker alone
        self.topics = FakeTopics()
        self.plog = FakeLog()
        self.fsyncs: list[asyncio.Future[None]] = []
        self.faults = Faults()
        self.dynamic_configs = DynamicConfigs(None)
        self.share_partitions = SharePartitionManager(SharePartitionConfig(), 10)

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> None:
        self.topics.created = True

    @property
    def partitions(self) -> FakeBroker:
        """The broker is its own partition home here: one log, led from start."""
        return self

    leads_everything = True

    def on_leadership_change(self, listener: object) -> None:
        pass

    def log(self, topic: str, partition: int) -> FakeLog:
        return self.plog

    def appended(self, topic: str, partition: int, plog: FakeLog) -> asyncio.Future[None]:
        self.fsyncs.append(asyncio.get_running_loop().create_future())
        return self.fsyncs[-1]

    def fsync(self) -> None:
        for f in self.fsyncs:
            if not f.done():
                f.set_result(None)


def run(scenario: Callable[[FakeBroker, CoordinatorRuntime], Awaitable[None]]) -> None:
    """Run a scenario on a loop whose time is the broker's virtual clock."""
    broker = FakeBroker()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        start = broker.clock.now_ms()
        # Small numbers: a timer due at exactly this time is seen as due.
        loop.time = lambda: (broker.clock.now_ms() - start) / 1000  # type: ignore[method-assign]
        runtime = CoordinatorRuntime(broker)  # type: ignore[arg-type]
        runtime.start()
        try:
            await scenario(broker, runtime)
        finally:
            broker.fsync()
            await runtime.stop()

    asyncio.run(main())


async def turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def fsynced(broker: FakeBroker) -> None:
    """Let the runtime append what is due, complete the fsyncs, let it answer."""
    await turns()
    broker.fsync()
    await turns()


async def described(runtime: CoordinatorRuntime, group: str) -> Any:
    """The group as DescribeGroups shows it."""
    describing = describe(runtime, group)
    await turns()
    (description,) = describing.result().groups
    return description


async def member_count(runtime: CoordinatorRuntime, group: str) -> int:
    return len((await described(runtime, group)).members)


def _ctx(api_key: int, version: int) -> RequestContext:
    return RequestContext(
        api_key=api_key, api_version=version, correlation_id=1, client_id="c", client_host="/h"
    )


def call(
    runtime: CoordinatorRuntime,
    group: str,
    api_key: int,
    version: int,
    method: str,
    request: Any,
    *extra: Any,
) -> asyncio.Task[Any]:
    coro: Coroutine[Any, Any, Any] = runtime.call(
        group, _ctx(api_key, version), lambda s, c, now: getattr(s, method)(request, c, now, *extra)
    )
    return asyncio.ensure_future(coro)


def commit(runtime: CoordinatorRuntime, group: str, offset: int) -> asyncio.Task[Any]:
    request = commit_request(group, offset)
    return call(runtime, group, apis.OFFSET_COMMIT, 9, "offset_commit", request)


def fetch(runtime: CoordinatorRuntime, group: str) -> asyncio.Task[Any]:
    request = OffsetFetchRequestGroup(
        group_id=GroupId(group), member_id=None, member_epoch=i32(-1), topics=None
    )
    return call(runtime, group, apis.OFFSET_FETCH, 9, "offset_fetch", request)


def join(
    runtime: CoordinatorRuntime, group: str, session_ms: int = SESSION_MS
) -> asyncio.Task[Any]:
    timeout = i32Timedelta.parse(datetime.timedelta(milliseconds=session_ms))
    request = JoinGroupRequest(
        group_id=GroupId(group),
        session_timeout=timeout,
        rebalance_timeout=timeout,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
    )
    return call(runtime, group, apis.JOIN_GROUP, 3, "join_group", request)


def heartbeat(runtime: CoordinatorRuntime, group: str, member: str, gen: int) -> asyncio.Task[Any]:
    request = HeartbeatRequest(
        group_id=GroupId(group), generation_id=i32(gen), member_id=member, group_instance_id=None
    )
    return call(runtime, group, apis.HEARTBEAT, 4, "heartbeat", request)


def sync(runtime: CoordinatorRuntime, group: str, member: str, gen: int) -> asyncio.Task[Any]:
    request = SyncGroupRequest(
        group_id=GroupId(group),
        generation_id=i32(gen),
        member_id=member,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=(SyncGroupRequestAssignment(member_id=member, assignment=b""),),
    )
    return call(runtime, group, apis.SYNC_GROUP, 5, "sync_group", request)


def describe(runtime: CoordinatorRuntime, group: str) -> asyncio.Task[Any]:
    request = DescribeGroupsRequest(groups=(GroupId(group),), include_authorized_operations=False)
    return call(runtime, group, apis.DESCRIBE_GROUPS, 5, "describe_groups", request)


def commit_error(task: asyncio.Task[Any]) -> ErrorCode:
    error: ErrorCode = task.result().topics[0].partitions[0].error_code
    return error


def test_a_commit_is_appended_at_once_and_answered_once_fsynced() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        committing = commit(runtime, "g", 5)
        await turns()
        assert len(broker.plog.records) == 1
        assert not committing.done()
        broker.fsync()
        await turns()
        assert commit_error(committing) == ErrorCode.none

    run(scenario)


def test_a_reply_waits_for_the_pending_writes_of_its_group_only() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        joining = join(runtime, "m")
        await fsynced(broker)
        joined = joining.result()
        committing = commit(runtime, "g", 5)
        await turns()
        fetching = fetch(runtime, "g")
        beating = heartbeat(runtime, "m", joined.member_id, joined.generation_id)
        await turns()
        assert beating.result().error_code == ErrorCode.none  # another group: not held
        assert not fetching.done()  # reads g's offsets: waits for the commit
        broker.fsync()
        await turns()
        assert commit_error(committing) == ErrorCode.none
        assert fetching.result().groups[0].topics[0].partitions[0].committed_offset == 5

    run(scenario)


def test_a_refused_append_answers_with_the_error_and_the_next_one_is_stored() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        broker.plog.refuse = OSError("disk gone")
        refused = commit(runtime, "g", 5)
        await turns()
        assert commit_error(refused) == ErrorCode.not_coordinator  # Kafka's answer
        broker.plog.refuse = None
        stored = commit(runtime, "g", 6)
        await fsynced(broker)
        assert commit_error(stored) == ErrorCode.none
        fetching = fetch(runtime, "g")
        await turns()
        assert fetching.result().groups[0].topics[0].partitions[0].committed_offset == 6

    run(scenario)


def test_an_append_refused_for_lost_leadership_drops_the_groups() -> None:
    """The log says another broker leads the partition (or may by now): the
    groups this shard holds are no longer answered from, not even a fetch."""

    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        stored = commit(runtime, "g", 5)
        await fsynced(broker)
        assert commit_error(stored) == ErrorCode.none
        broker.plog.refuse = KafkaError(ErrorCode.not_leader_or_follower, "led elsewhere")
        refused = commit(runtime, "g", 6)
        await turns()
        assert commit_error(refused) == ErrorCode.not_coordinator
        fetching = fetch(runtime, "g")
        await turns()
        error = fetching.exception()
        assert isinstance(error, KafkaError) and error.error_code == ErrorCode.not_coordinator

    run(scenario)


def test_an_append_refused_by_the_disk_keeps_the_groups() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        stored = commit(runtime, "g", 5)
        await fsynced(broker)
        broker.plog.refuse = KafkaError(ErrorCode.kafka_storage_error, "disk gone")
        commit(runtime, "g", 6)
        await turns()
        fetching = fetch(runtime, "g")
        await turns()
        assert commit_error(stored) == ErrorCode.none
        assert fetching.result().groups[0].topics[0].partitions[0].committed_offset == 5

    run(scenario)


def test_a_failed_fsync_answers_with_the_error_and_takes_the_commit_back() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        kept = commit(runtime, "g", 5)
        await fsynced(broker)
        assert commit_error(kept) == ErrorCode.none
        lost = commit(runtime, "g", 6)
        await turns()
        broker.fsyncs[-1].set_exception(OSError("fsync failed"))
        await turns()
        assert commit_error(lost) == ErrorCode.not_coordinator
        fetching = fetch(runtime, "g")
        await turns()
        assert fetching.result().groups[0].topics[0].partitions[0].committed_offset == 5

    run(scenario)


def test_a_reply_gives_up_after_the_commit_timeout_and_later_replies_still_wait() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        committing = commit(runtime, "g", 5)
        await turns()
        broker.clock.advance(COMMIT_TIMEOUT_MS - 1)
        await turns()
        assert not committing.done()
        fetching = fetch(runtime, "g")
        broker.clock.advance(1)
        await turns()
        failure = committing.exception()
        assert isinstance(failure, KafkaError)
        assert failure.error_code == ErrorCode.request_timed_out
        assert not fetching.done()  # its own timeout has not run out
        broker.fsync()
        await turns()
        assert fetching.result().groups[0].topics[0].partitions[0].committed_offset == 5

    run(scenario)


def test_a_silent_member_is_removed_when_its_session_runs_out() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        joining = join(runtime, "m")
        await fsynced(broker)
        assert joining.result().error_code == ErrorCode.none
        broker.clock.advance(SESSION_MS - 1)
        await turns()
        assert await member_count(runtime, "m") == 1
        broker.clock.advance(1)
        await fsynced(broker)
        group = await described(runtime, "m")
        assert (group.group_state, group.members) == ("Empty", ())

    run(scenario)


def test_heartbeats_keep_a_member_and_it_is_removed_a_session_after_the_last() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        joining = join(runtime, "m")
        await fsynced(broker)
        joined = joining.result()
        syncing = sync(runtime, "m", joined.member_id, joined.generation_id)
        await fsynced(broker)
        assert syncing.result().error_code == ErrorCode.none
        for _ in range(3):  # each postpones the session past the timer set before it
            broker.clock.advance(SESSION_MS // 2)
            beating = heartbeat(runtime, "m", joined.member_id, joined.generation_id)
            await fsynced(broker)
            assert beating.result().error_code == ErrorCode.none
        broker.clock.advance(SESSION_MS - 1)
        await turns()
        assert await member_count(runtime, "m") == 1
        broker.clock.advance(1)
        await fsynced(broker)
        group = await described(runtime, "m")
        assert (group.group_state, group.members) == ("Empty", ())

    run(scenario)


def test_a_shorter_session_than_the_timers_set_runs_out_on_time() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        joining = []
        for group, session_ms in (("long", 3 * SESSION_MS), ("short", SESSION_MS)):
            joining.append(join(runtime, group, session_ms))
            await fsynced(broker)
        assert [j.result().error_code for j in joining] == [ErrorCode.none] * 2
        broker.clock.advance(SESSION_MS)
        await fsynced(broker)
        describing = describe(runtime, "short"), describe(runtime, "long")
        await turns()
        assert [len(d.result().groups[0].members) for d in describing] == [0, 1]

    run(scenario)


# -- leadership: the partition moves away and back -----------------------------


def not_coordinator(task: asyncio.Task[Any]) -> bool:
    failure = task.exception()
    return isinstance(failure, KafkaError) and failure.error_code == ErrorCode.not_coordinator


async def moved_back(runtime: CoordinatorRuntime, epoch: int) -> None:
    """Lose partition 0, gain it again at ``epoch`` and let it load."""
    runtime.partition_lost(0)
    runtime.partition_gained(0, epoch)
    await turns()


def test_a_parked_join_is_told_not_coordinator_when_the_partition_is_lost() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        first = join(runtime, "m")
        await fsynced(broker)
        member = first.result().member_id
        # A second member's join parks: the rebalance waits for the first to rejoin.
        parked = join(runtime, "m")
        await fsynced(broker)
        assert not parked.done()
        runtime.partition_lost(0)
        await turns()
        assert parked.result().error_code == ErrorCode.not_coordinator
        later = heartbeat(runtime, "m", member, 1), commit(runtime, "g", 5)
        await turns()
        assert all(not_coordinator(task) for task in later)

    run(scenario)


def test_commits_acknowledged_before_the_loss_are_there_after_the_regain() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        acknowledged = commit(runtime, "g", 5)
        await fsynced(broker)
        assert commit_error(acknowledged) == ErrorCode.none
        await moved_back(runtime, 1)
        fetching = fetch(runtime, "g")
        await turns()
        assert fetching.result().groups[0].topics[0].partitions[0].committed_offset == 5

    run(scenario)


def test_a_commit_in_flight_at_the_loss_is_answered_once_durable() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        in_flight = commit(runtime, "g", 5)
        await turns()  # appended, waiting for its fsync
        runtime.partition_lost(0)
        broker.fsync()
        await turns()
        assert commit_error(in_flight) == ErrorCode.none
        runtime.partition_gained(0, 1)
        await turns()
        fetching = fetch(runtime, "g")
        await turns()
        assert fetching.result().groups[0].topics[0].partitions[0].committed_offset == 5

    run(scenario)


def test_a_commit_not_yet_appended_at_the_loss_is_told_not_coordinator_and_not_stored() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        stored = commit(runtime, "g", 5)
        await fsynced(broker)
        assert commit_error(stored) == ErrorCode.none
        late = commit(runtime, "g", 6)
        await asyncio.sleep(0)  # handled; its append waits for the end of the turn
        runtime.partition_lost(0)
        await fsynced(broker)
        assert commit_error(late) == ErrorCode.not_coordinator
        runtime.partition_gained(0, 1)
        await turns()
        fetching = fetch(runtime, "g")
        await turns()
        assert fetching.result().groups[0].topics[0].partitions[0].committed_offset == 5

    run(scenario)


def test_a_failed_fsync_after_the_loss_answers_the_error_and_touches_nothing_held() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        lost = commit(runtime, "g", 5)
        await turns()
        runtime.partition_lost(0)
        runtime.partition_gained(0, 1)  # loads the record appended, as a log that kept it
        await turns()
        broker.fsyncs[-1].set_exception(OSError("fsync failed"))
        await turns()
        assert commit_error(lost) == ErrorCode.not_coordinator
        after = commit(runtime, "g", 6)
        await fsynced(broker)
        assert commit_error(after) == ErrorCode.none

    run(scenario)


def test_no_timer_of_a_lost_partition_fires() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        joining = join(runtime, "m")
        await fsynced(broker)
        assert joining.result().error_code == ErrorCode.none
        records = len(broker.plog.records)
        runtime.partition_lost(0)
        broker.clock.advance(10 * SESSION_MS)  # past the session and a retention check
        await fsynced(broker)
        assert len(broker.plog.records) == records  # no member removed, nothing expired

    run(scenario)


def test_a_member_whose_session_ran_out_during_the_move_gets_a_fresh_session() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        joining = join(runtime, "m")
        await fsynced(broker)
        joined = joining.result()
        syncing = sync(runtime, "m", joined.member_id, joined.generation_id)
        await fsynced(broker)
        assert syncing.result().error_code == ErrorCode.none
        runtime.partition_lost(0)
        broker.clock.advance(2 * SESSION_MS)  # its session would have run out
        await moved_back(runtime, 1)
        broker.clock.advance(SESSION_MS - 1)
        await turns()
        assert await member_count(runtime, "m") == 1  # the session restarted at the load
        beating = heartbeat(runtime, "m", joined.member_id, joined.generation_id)
        await fsynced(broker)
        assert beating.result().error_code == ErrorCode.none
        broker.clock.advance(SESSION_MS)  # silent for a whole session: removed
        await fsynced(broker)
        assert await member_count(runtime, "m") == 0

    run(scenario)


def test_a_request_during_the_reload_gets_load_in_progress() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        stored = commit(runtime, "g", 5)
        await fsynced(broker)
        assert commit_error(stored) == ErrorCode.none
        held: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        scan = runtime._scan

        async def held_scan(partition: int) -> Any:
            await held
            return await scan(partition)

        runtime._scan = held_scan  # type: ignore[method-assign]
        runtime.partition_lost(0)
        runtime.partition_gained(0, 1)
        during = commit(runtime, "g", 6)
        await turns()
        assert commit_error(during) == ErrorCode.coordinator_load_in_progress
        held.set_result(None)
        await turns()
        fetching = fetch(runtime, "g")
        await turns()
        assert fetching.result().groups[0].topics[0].partitions[0].committed_offset == 5

    run(scenario)


def test_a_load_cancelled_by_the_loss_leaves_the_next_gain_to_load() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        stored = commit(runtime, "g", 5)
        await fsynced(broker)
        assert commit_error(stored) == ErrorCode.none
        runtime.partition_lost(0)
        runtime.partition_gained(0, 1)
        runtime.partition_lost(0)  # before the load ran
        runtime.partition_gained(0, 2)
        runtime.partition_gained(0, 2)  # the same epoch again: nothing changes
        runtime.partition_lost(0, 1)  # an older epoch's loss: ignored
        await turns()
        assert runtime.leader_epoch(0) == 2
        fetching = fetch(runtime, "g")
        await turns()
        assert fetching.result().groups[0].topics[0].partitions[0].committed_offset == 5

    run(scenario)


def test_gaining_at_a_new_epoch_reloads_the_partition() -> None:
    async def scenario(broker: FakeBroker, runtime: CoordinatorRuntime) -> None:
        stored = commit(runtime, "g", 5)
        await fsynced(broker)
        assert commit_error(stored) == ErrorCode.none
        # Another leader wrote in between; the log has its record.
        runtime.partition_lost(0)
        broker.plog.records.append(broker.plog.records[-1])
        runtime.partition_gained(0, 1)
        await turns()
        broker.clock.advance(1)
        overwritten = commit(runtime, "g", 7)
        await fsynced(broker)
        assert commit_error(overwritten) == ErrorCode.none
        runtime.partition_gained(0, 3)  # straight to a later epoch
        await turns()
        fetching = fetch(runtime, "g")
        await turns()
        assert fetching.result().groups[0].topics[0].partitions[0].committed_offset == 7

    run(scenario)
