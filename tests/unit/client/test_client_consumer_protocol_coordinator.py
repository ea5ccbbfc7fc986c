"""ConsumerProtocolCoordinator (group.protocol=consumer) against a scripted
coordinator on virtual time: reconciliation steps and the order of commits and
hooks, acknowledgements, fencing, leaving, and the member epoch on commits."""

from __future__ import annotations

import asyncio
import datetime
import itertools
import re
import uuid
from collections.abc import Awaitable, Callable
from types import SimpleNamespace as NS
from typing import Any

import pytest
from client_fakes import FakeBroker, committed
from virtual_time import run_virtual

from kgroups.client.cluster import TopicInfo
from kgroups.client.config_schema import ConfigError
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.consumer_membership import MemberState
from kgroups.client.consumer_protocol_coordinator import ConsumerProtocolCoordinator
from kgroups.client.consumer_record import OffsetAndMetadata, TopicPartition
from kgroups.client.coordinator_link import CoordinatorLink
from kgroups.client.exceptions import CommitFailedError, StaleMemberEpochError
from kgroups.client.subscription_state import SubscriptionState
from kgroups.errors import ErrorCode

TOPIC_ID = uuid.UUID(int=7)
INTERVAL_MS = 1000


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    run_virtual(scenario, timeout=60)


def T(partition: int) -> TopicPartition:
    return TopicPartition("t", partition)


class Coordinator(FakeBroker):
    """Answers heartbeats like a KIP-848 coordinator whose target for the one
    member is ``target``; each new target bumps the epoch."""

    def __init__(self) -> None:
        super().__init__(partitions=4)
        self.metadata.topics["t"] = TopicInfo("t", dict.fromkeys(range(4), 0), topic_id=TOPIC_ID)
        self.target: tuple[int, ...] = (0, 1, 2, 3)
        self.epoch = 0
        self._given: tuple[int, ...] | None = None
        self.events: list[tuple[str, Any]] = []
        self.beat_times: list[float] = []

    def set_target(self, *partitions: int) -> None:
        self.target = partitions

    def heartbeats(self) -> list[Any]:
        return self.requests("ConsumerGroupHeartbeat")

    def _default_ConsumerGroupHeartbeat(self, request: Any) -> Any:
        owned = None
        if request.topic_partitions is not None:
            owned = sorted(p for t in request.topic_partitions for p in t.partitions)
        self.events.append(("heartbeat", (request.member_epoch, owned)))
        self.beat_times.append(asyncio.get_running_loop().time())
        if request.member_epoch < 0:
            return heartbeat_answer(request.member_epoch, None)
        if request.member_epoch == 0:
            self._given = None
        assignment = None
        if self._given != self.target:
            self.epoch += 1
            self._given = self.target
            assignment = self.target
        return heartbeat_answer(self.epoch, assignment, member_id=request.member_id)

    def _default_OffsetCommit(self, request: Any) -> Any:
        offsets = {
            p.partition_index: p.committed_offset for t in request.topics for p in t.partitions
        }
        self.events.append(("commit", offsets))
        return committed(request, ErrorCode.none)


def heartbeat_answer(
    epoch: int,
    partitions: tuple[int, ...] | None,
    *,
    error: ErrorCode = ErrorCode.none,
    member_id: str | None = None,
) -> Any:
    assignment = None
    if partitions is not None:
        assignment = NS(topic_partitions=(NS(topic_id=TOPIC_ID, partitions=partitions),))
    return NS(
        error_code=error,
        error_message=None,
        member_id=member_id,
        member_epoch=epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=INTERVAL_MS),
        assignment=assignment,
    )


class Listener:
    def __init__(self, events: list[tuple[str, Any]]) -> None:
        self.events = events

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        self.events.append(("revoked", [p.partition for p in partitions]))

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        self.events.append(("assigned", [p.partition for p in partitions]))

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        self.events.append(("lost", [p.partition for p in partitions]))


def make(
    broker: Coordinator, **config: Any
) -> tuple[ConsumerProtocolCoordinator, SubscriptionState]:
    settings = {
        "bootstrap.servers": "fake:9092",
        "group.id": "g",
        "group.protocol": "consumer",
        "retry.backoff.ms": 5,
        "request.timeout.ms": 1000,
        "max.poll.interval.ms": 60000,
        **config,
    }
    subscriptions = SubscriptionState()
    subscriptions.subscribe(["t"], Listener(broker.events))
    clock = asyncio.get_running_loop().time
    link = CoordinatorLink(
        "g",
        broker,
        connect=broker.connect,
        request_timeout_ms=1000,
        retry_backoff_ms=5,
        clock=clock,
    )
    coordinator = ConsumerProtocolCoordinator(
        ConsumerConfig.from_dict(settings), subscriptions, broker, link, clock=clock
    )
    return coordinator, subscriptions


async def poll_until(
    coordinator: ConsumerProtocolCoordinator, done: Callable[[], bool], timeout: float = 20
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not done():
        assert loop.time() < deadline, "condition not met in time"
        await coordinator.poll(loop.time() + 0.05)
        await asyncio.sleep(0.05)


def hooks(events: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return [e for e in events if e[0] in ("revoked", "assigned", "lost")]


def test_joining_reconciles_then_acknowledges_at_once() -> None:
    async def scenario() -> None:
        broker = Coordinator()
        coordinator, subscriptions = make(broker)
        try:
            await poll_until(coordinator, lambda: coordinator.state is MemberState.STABLE)
            assert subscriptions.assigned_partitions() == {T(0), T(1), T(2), T(3)}
            assert hooks(broker.events) == [("assigned", [0, 1, 2, 3])]
            beats = [e[1] for e in broker.events if e[0] == "heartbeat"]
            # Joined with epoch 0 owning nothing; the next heartbeat acknowledges.
            assert beats[:2] == [(0, []), (1, [0, 1, 2, 3])]
            join, ack = broker.heartbeats()[:2]
            assert ack.member_id == join.member_id
            # The ack did not wait for the interval.
            assert broker.beat_times[1] - broker.beat_times[0] < INTERVAL_MS / 1000 / 2
        finally:
            await coordinator.close(5)

    run(scenario)


def test_heartbeats_follow_the_interval_the_coordinator_gives() -> None:
    async def scenario() -> None:
        broker = Coordinator()
        coordinator, _ = make(broker)
        try:
            await poll_until(coordinator, lambda: len(broker.beat_times) >= 5)
            stamps = broker.beat_times
            gaps = [b - a for a, b in itertools.pairwise(stamps[2:])]
            assert gaps and all(g == pytest.approx(INTERVAL_MS / 1000, abs=0.06) for g in gaps)
            # Only the joining heartbeat named the topics; the later ones say nothing new.
            names = [r.subscribed_topic_names for r in broker.heartbeats()]
            assert names[0] == ("t",) and all(n is None for n in names[1:])
        finally:
            await coordinator.close(5)

    run(scenario)


def test_revocation_commits_then_revokes_then_assigns_then_acknowledges() -> None:
    async def scenario() -> None:
        broker = Coordinator()
        coordinator, subscriptions = make(broker)
        try:
            await poll_until(coordinator, lambda: coordinator.state is MemberState.STABLE)
            for p in range(4):
                subscriptions.seek(T(p), 10 + p)
            broker.events.clear()
            broker.set_target(2, 3)
            await poll_until(
                coordinator,
                lambda: (
                    coordinator.state is MemberState.STABLE
                    and subscriptions.assigned_partitions() == {T(2), T(3)}
                ),
            )
            steps = [e for e in broker.events if e[0] != "heartbeat" or e[1][1] is not None]
            assert steps == [
                ("commit", {0: 10, 1: 11, 2: 12, 3: 13}),
                ("revoked", [0, 1]),
                ("assigned", []),  # called on every reconciliation, as in Java
                ("heartbeat", (2, [2, 3])),
            ]
            # Partitions gained later are assigned without revoking the kept ones.
            broker.events.clear()
            broker.set_target(1, 2, 3)
            await poll_until(
                coordinator, lambda: subscriptions.assigned_partitions() == {T(1), T(2), T(3)}
            )
            assert hooks(broker.events) == [("assigned", [1])]
            assert subscriptions.position(T(2)) == 12  # kept partitions keep their place
        finally:
            await coordinator.close(5)

    run(scenario)


@pytest.mark.parametrize("error", [ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id])
def test_a_fenced_member_loses_its_partitions_and_rejoins(error: ErrorCode) -> None:
    async def scenario() -> None:
        broker = Coordinator()
        coordinator, subscriptions = make(broker)
        try:
            await poll_until(coordinator, lambda: coordinator.state is MemberState.STABLE)
            member_id = coordinator.generation.member_id
            broker.events.clear()
            broker.queue("ConsumerGroupHeartbeat", heartbeat_answer(0, None, error=error))
            await poll_until(
                coordinator,
                lambda: (
                    coordinator.state is MemberState.STABLE
                    and any(e == ("assigned", [0, 1, 2, 3]) for e in broker.events)
                ),
            )
            assert hooks(broker.events) == [("lost", [0, 1, 2, 3]), ("assigned", [0, 1, 2, 3])]
            rejoin = [r for r in broker.heartbeats() if r.member_epoch == 0][-1]
            assert rejoin.member_id == member_id
            assert rejoin.topic_partitions == ()  # owns nothing after the loss
            assert not [e for e in broker.events if e[0] == "commit"]  # lost: nothing to commit
            assert subscriptions.assigned_partitions() == {T(0), T(1), T(2), T(3)}
        finally:
            await coordinator.close(5)

    run(scenario)


@pytest.mark.parametrize(("instance_id", "epoch"), [(None, -1), ("static-1", -2)])
def test_close_revokes_commits_and_leaves(instance_id: str | None, epoch: int) -> None:
    async def scenario() -> None:
        broker = Coordinator()
        coordinator, subscriptions = make(broker, **{"group.instance.id": instance_id})
        await poll_until(coordinator, lambda: coordinator.state is MemberState.STABLE)
        subscriptions.seek(T(0), 5)
        broker.events.clear()
        await coordinator.close(5)
        assert [e[0] for e in broker.events] == ["commit", "revoked", "heartbeat"]
        leave = broker.heartbeats()[-1]
        assert leave.member_epoch == epoch and leave.instance_id == instance_id

    run(scenario)


def test_commits_carry_member_id_and_epoch_and_a_stale_epoch_fails_them() -> None:
    async def scenario() -> None:
        broker = Coordinator()
        coordinator, _ = make(broker, **{"enable.auto.commit": False})
        try:
            await poll_until(coordinator, lambda: coordinator.state is MemberState.STABLE)
            offsets = {T(0): OffsetAndMetadata(3)}
            loop = asyncio.get_running_loop()
            await coordinator.committer.commit(offsets, loop.time() + 5)
            request = broker.requests("OffsetCommit")[-1]
            assert request.member_id == coordinator.generation.member_id
            assert request.generation_id_or_member_epoch == coordinator.generation.generation_id

            stale = NS(
                topics=(
                    NS(
                        name="t",
                        partitions=(
                            NS(partition_index=0, error_code=ErrorCode.stale_member_epoch),
                        ),
                    ),
                )
            )
            broker.queue("OffsetCommit", stale)
            with pytest.raises(StaleMemberEpochError) as raised:
                await coordinator.committer.commit(offsets, loop.time() + 5)
            assert isinstance(raised.value, CommitFailedError)
            # Before partitions are given up, a stale epoch is retried instead.
            broker.queue("OffsetCommit", stale)
            before = len(broker.requests("OffsetCommit"))
            await coordinator.committer.commit(offsets, loop.time() + 5, retry_stale_epoch=True)
            assert len(broker.requests("OffsetCommit")) == before + 2

            await coordinator.committer.fetch({T(0)}, loop.time() + 5)
            group = broker.requests("OffsetFetch")[-1].groups[0]
            assert group.member_id == coordinator.generation.member_id
            assert group.member_epoch == coordinator.generation.generation_id
        finally:
            await coordinator.close(5)

    run(scenario)


def test_a_member_that_stops_polling_leaves_and_rejoins_on_its_next_poll() -> None:
    async def scenario() -> None:
        broker = Coordinator()
        coordinator, _ = make(broker, **{"max.poll.interval.ms": 3000})
        try:
            await poll_until(coordinator, lambda: coordinator.state is MemberState.STABLE)
            broker.events.clear()
            await asyncio.sleep(5)  # no poll
            assert coordinator.state is MemberState.STALE
            assert ("heartbeat", (-1, None)) in broker.events
            await poll_until(coordinator, lambda: coordinator.state is MemberState.STABLE)
            assert hooks(broker.events) == [("lost", [0, 1, 2, 3]), ("assigned", [0, 1, 2, 3])]
        finally:
            await coordinator.close(5)

    run(scenario)


@pytest.mark.parametrize(
    "key", ["session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"]
)
def test_keys_the_coordinator_owns_cannot_be_set(key: str) -> None:
    value = "range" if key == "partition.assignment.strategy" else 1000
    with pytest.raises(ConfigError, match=re.escape(key)):
        ConsumerConfig.from_dict(
            {"bootstrap.servers": "x:1", "group.id": "g", "group.protocol": "consumer", key: value}
        )
    with pytest.raises(ConfigError, match=re.escape("group.remote.assignor")):
        ConsumerConfig.from_dict(
            {"bootstrap.servers": "x:1", "group.id": "g", "group.remote.assignor": "uniform"}
        )


def test_a_regex_subscription_is_sent_and_new_topic_ids_resolved_through_metadata() -> None:
    async def scenario() -> None:
        broker = Coordinator()
        known = broker.metadata.topics.pop("t")  # the member never asked about it
        refreshed: list[list[str] | None] = []

        async def refresh(topics: list[str] | None = None, auto_create: bool = False) -> None:
            refreshed.append(topics)
            broker.metadata.topics["t"] = known

        broker.refresh = refresh  # type: ignore[method-assign]
        coordinator, subscriptions = make(broker)
        subscriptions.unsubscribe()
        subscriptions.subscribe_regex("t|u", Listener(broker.events))
        try:
            await poll_until(coordinator, lambda: coordinator.state is MemberState.STABLE)
            join = broker.heartbeats()[0]
            assert join.subscribed_topic_regex == "t|u"
            assert join.subscribed_topic_names is None
            assert refreshed == [None]  # every topic: the coordinator did the matching
            assert subscriptions.assigned_partitions() == {T(0), T(1), T(2), T(3)}
            assert subscriptions.metadata_topics() == {"t"}
        finally:
            await coordinator.close(5)

    run(scenario)


def test_subscribing_to_a_pattern_for_the_coordinator_needs_the_consumer_protocol() -> None:
    from kgroups.client.async_consumer import AsyncConsumer

    async def scenario() -> None:
        base = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}
        classic = AsyncConsumer(base)
        with pytest.raises(RuntimeError, match=re.escape("group.protocol=consumer")):
            classic.subscribe(pattern="orders-.*")
        await classic.close(0)
        consumer = AsyncConsumer({**base, "group.protocol": "consumer"})
        consumer.subscribe(pattern="orders-.*")
        assert consumer._subscriptions.regex == "orders-.*"
        with pytest.raises(ValueError, match="not both"):
            consumer.subscribe(["orders"], pattern="orders-.*")
        await consumer.close(0)

    run(scenario)


def test_unsubscribing_leaves_and_subscribing_again_joins_with_the_same_id() -> None:
    async def scenario() -> None:
        broker = Coordinator()
        coordinator, subscriptions = make(broker)
        try:
            await poll_until(coordinator, lambda: coordinator.state is MemberState.STABLE)
            member_id = coordinator.generation.member_id
            broker.events.clear()
            await coordinator.on_leave_prepare()
            await coordinator.maybe_leave_group("the consumer unsubscribed")
            subscriptions.unsubscribe()
            assert hooks(broker.events) == [("revoked", [0, 1, 2, 3])]
            assert broker.heartbeats()[-1].member_epoch == -1
            assert coordinator.state is MemberState.UNSUBSCRIBED
            subscriptions.subscribe(["t"], Listener(broker.events))
            await poll_until(coordinator, lambda: coordinator.state is MemberState.STABLE)
            rejoin = [r for r in broker.heartbeats() if r.member_epoch == 0][-1]
            assert rejoin.member_id == member_id
            assert rejoin.subscribed_topic_names == ("t",)
        finally:
            await coordinator.close(5)

    run(scenario)


def test_the_poll_that_joins_applies_the_first_assignment() -> None:
    async def scenario() -> None:
        broker = Coordinator()
        coordinator, subscriptions = make(broker)
        try:
            loop = asyncio.get_running_loop()
            assert await coordinator.poll(loop.time() + 5)
            assert subscriptions.assigned_partitions() == {T(0), T(1), T(2), T(3)}
        finally:
            await coordinator.close(5)

    run(scenario)
