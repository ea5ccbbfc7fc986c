"""The ConsumerCoordinator against a scripted broker: the join flow and how it meets
every error the coordinator may answer, as the Java client does."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import SimpleNamespace as NS
from typing import Any

import pytest
from client_fakes import (
    FakeBroker,
    assignment,
    committed,
    found,
    heartbeat,
    join_error,
    joined,
    make_coordinator,
    synced,
    until,
)
from virtual_time import run_virtual

from kgroups.assignors.protocol import (
    Subscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_subscription,
)
from kgroups.client.connection import ConnectionClosed
from kgroups.client.consumer_record import OffsetAndMetadata
from kgroups.client.coordinator import ConsumerCoordinator
from kgroups.client.exceptions import (
    CommitFailedError,
    FencedInstanceIdError,
    RebalanceInProgressError,
)
from kgroups.client.group_membership import Generation, MemberState
from kgroups.client.rebalance_listener import RebalanceListener
from kgroups.errors import ErrorCode, KafkaError


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    run_virtual(scenario, timeout=10)


async def _joined(broker: FakeBroker, **config: Any) -> ConsumerCoordinator:
    coordinator, _ = make_coordinator(broker, **config)
    assert await coordinator.poll(None)
    return coordinator


def T(partition: int) -> TopicPartition:
    return TopicPartition("t", partition)


class Recorder(RebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[int]]] = []

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        self.calls.append(("revoked", [p.partition for p in partitions]))

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        self.calls.append(("assigned", [p.partition for p in partitions]))

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        self.calls.append(("lost", [p.partition for p in partitions]))


# -- finding the coordinator -------------------------------------------------


def test_coordinator_lookup_retries_until_one_is_available() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        broker.queue(
            "FindCoordinator",
            found(ErrorCode.coordinator_not_available),
            ConnectionClosed("down"),
            found(ErrorCode.none),
        )
        coordinator = await _joined(broker)
        assert len(broker.requests("FindCoordinator")) == 3
        assert coordinator.state is MemberState.STABLE
        await coordinator.close(1)

    run(scenario)


def test_a_lookup_refused_for_good_is_raised() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        broker.queue("FindCoordinator", found(ErrorCode.group_authorization_failed))
        coordinator, _ = make_coordinator(broker)
        with pytest.raises(KafkaError) as caught:
            await coordinator.poll(None)
        assert caught.value.error_code == ErrorCode.group_authorization_failed
        await coordinator.close(1)

    run(scenario)


# -- joining ------------------------------------------------------------------


def test_a_new_member_rejoins_with_the_member_id_it_was_given() -> None:
    """KIP-394: the first JoinGroup of a dynamic member only gets an id."""

    async def scenario() -> None:
        broker = FakeBroker()
        broker.queue("JoinGroup", join_error(ErrorCode.member_id_required, "given-id"))
        coordinator = await _joined(broker)
        first, second = broker.requests("JoinGroup")
        assert first.member_id == ""
        assert second.member_id == "given-id"
        assert coordinator.generation.member_id == "given-id"
        await coordinator.close(1)

    run(scenario)


def test_join_metadata_carries_topics_owned_partitions_and_generation() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator, _ = make_coordinator(
            broker, **{"partition.assignment.strategy": "cooperative-sticky"}
        )
        assert await coordinator.poll(None)
        coordinator.request_rejoin("test")
        assert await coordinator.poll(None)
        second = broker.requests("JoinGroup")[-1]
        subscription = decode_subscription(second.protocols[0].metadata)
        assert subscription.topics == ["t"]
        assert subscription.owned_partitions == [T(0), T(1), T(2), T(3)]
        assert subscription.generation_id == 1
        assert second.rebalance_timeout.total_seconds() == 5.0  # max.poll.interval.ms
        await coordinator.close(1)

    run(scenario)


@pytest.mark.parametrize("error", [ErrorCode.not_coordinator, ErrorCode.coordinator_not_available])
def test_join_to_a_moved_coordinator_rediscovers_it(error: ErrorCode) -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        broker.queue("JoinGroup", join_error(error))
        coordinator = await _joined(broker)
        assert len(broker.requests("FindCoordinator")) == 2
        assert coordinator.state is MemberState.STABLE
        await coordinator.close(1)

    run(scenario)


def test_join_while_the_coordinator_loads_retries_without_rediscovery() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        broker.queue("JoinGroup", join_error(ErrorCode.coordinator_load_in_progress))
        coordinator = await _joined(broker)
        assert len(broker.requests("FindCoordinator")) == 1
        assert len(broker.requests("JoinGroup")) == 2
        await coordinator.close(1)

    run(scenario)


def test_unknown_member_id_from_join_forgets_the_id() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)
        coordinator.request_rejoin("test")
        broker.queue("JoinGroup", join_error(ErrorCode.unknown_member_id))
        assert await coordinator.poll(None)
        requests = broker.requests("JoinGroup")
        assert requests[-2].member_id == "member-1"
        assert requests[-1].member_id == ""
        await coordinator.close(1)

    run(scenario)


@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.inconsistent_group_protocol,
        ErrorCode.invalid_session_timeout,
        ErrorCode.group_max_size_reached,
    ],
)
def test_join_errors_that_cannot_be_retried_are_raised(error: ErrorCode) -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        broker.queue("JoinGroup", join_error(error))
        coordinator, _ = make_coordinator(broker)
        with pytest.raises(KafkaError) as caught:
            await coordinator.poll(None)
        assert caught.value.error_code == error
        await coordinator.close(1)

    run(scenario)


def test_a_fenced_static_member_fails_for_good() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        broker.queue("JoinGroup", join_error(ErrorCode.fenced_instance_id))
        coordinator, _ = make_coordinator(broker, **{"group.instance.id": "i1"})
        with pytest.raises(FencedInstanceIdError):
            await coordinator.poll(None)
        with pytest.raises(FencedInstanceIdError):
            await coordinator.poll(None)
        await coordinator.close(1)

    run(scenario)


@pytest.mark.parametrize(
    "error",
    [ErrorCode.rebalance_in_progress, ErrorCode.illegal_generation, ErrorCode.unknown_member_id],
)
def test_sync_errors_lead_to_a_new_join(error: ErrorCode) -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        broker.queue("SyncGroup", synced(b"", error=error))
        coordinator = await _joined(broker)
        assert len(broker.requests("JoinGroup")) == 2
        assert coordinator.state is MemberState.STABLE
        assert coordinator.generation.generation_id == 2
        await coordinator.close(1)

    run(scenario)


def test_the_leader_assigns_from_every_members_subscription() -> None:
    async def scenario() -> None:
        broker = FakeBroker(partitions=4)
        others = encode_subscription(Subscription(topics=["t"]))

        def join(request: Any) -> Any:
            mine = request.protocols[0].metadata
            members = (
                NS(member_id="a", group_instance_id=None, metadata=mine),
                NS(member_id="b", group_instance_id=None, metadata=others),
            )
            return joined(1, "a", leader="a", members=members)

        broker.queue("JoinGroup", join)
        coordinator = await _joined(broker)
        sync = broker.requests("SyncGroup")[0]
        sent = {a.member_id: decode_assignment(a.assignment).partitions for a in sync.assignments}
        assert sent == {"a": [T(0), T(1)], "b": [T(2), T(3)]}
        assert coordinator.is_leader
        await coordinator.close(1)

    run(scenario)


def test_a_cooperative_leader_never_moves_a_partition_in_one_step() -> None:
    async def scenario() -> None:
        broker = FakeBroker(partitions=4)
        # b owns everything; the leader a must not take any of it directly.
        owner = encode_subscription(
            Subscription(topics=["t"], owned_partitions=[T(0), T(1), T(2), T(3)], generation_id=1)
        )

        def join(request: Any) -> Any:
            members = (
                NS(member_id="a", group_instance_id=None, metadata=request.protocols[0].metadata),
                NS(member_id="b", group_instance_id=None, metadata=owner),
            )
            return joined(2, "a", leader="a", members=members, protocol="cooperative-sticky")

        broker.queue("JoinGroup", join)
        coordinator, _ = make_coordinator(
            broker, **{"partition.assignment.strategy": "cooperative-sticky"}
        )
        assert await coordinator.poll(None)
        sync = broker.requests("SyncGroup")[0]
        sent = {a.member_id: decode_assignment(a.assignment).partitions for a in sync.assignments}
        assert sent["a"] == []
        assert len(sent["b"]) == 2
        await coordinator.close(1)

    run(scenario)


# -- rebalance hooks ----------------------------------------------------------


def test_eager_hooks_revoke_all_before_joining_and_assign_after() -> None:
    async def scenario() -> None:
        broker = FakeBroker(partitions=4)
        recorder = Recorder()
        coordinator, subscriptions = make_coordinator(broker, recorder)
        assert await coordinator.poll(None)
        broker.queue("SyncGroup", synced(assignment(1, 2)))
        coordinator.request_rejoin("test")
        assert await coordinator.poll(None)
        assert recorder.calls == [
            ("assigned", [0, 1, 2, 3]),
            ("revoked", [0, 1, 2, 3]),
            ("assigned", [1, 2]),
        ]
        assert subscriptions.assigned_partitions() == {T(1), T(2)}
        await coordinator.close(1)

    run(scenario)


def test_cooperative_hooks_revoke_only_what_moves_then_rejoin() -> None:
    async def scenario() -> None:
        broker = FakeBroker(partitions=4)
        recorder = Recorder()
        coordinator, subscriptions = make_coordinator(
            broker, recorder, **{"partition.assignment.strategy": "cooperative-sticky"}
        )
        assert await coordinator.poll(None)
        broker.queue(
            "SyncGroup",
            synced(assignment(0, 1), "cooperative-sticky"),
            synced(assignment(0, 1), "cooperative-sticky"),
        )
        coordinator.request_rejoin("test")
        assert await coordinator.poll(None)
        assert recorder.calls == [
            ("assigned", [0, 1, 2, 3]),
            ("revoked", [2, 3]),
            ("assigned", []),
            ("assigned", []),  # the follow-up rebalance after the revocation
        ]
        assert len(broker.requests("JoinGroup")) == 3
        assert subscriptions.assigned_partitions() == {T(0), T(1)}
        await coordinator.close(1)

    run(scenario)


def test_partitions_are_lost_not_revoked_when_the_membership_is_gone() -> None:
    async def scenario() -> None:
        broker = FakeBroker(partitions=2)
        recorder = Recorder()
        coordinator, _ = make_coordinator(broker, recorder)
        assert await coordinator.poll(None)
        coordinator.handle_heartbeat_error(ErrorCode.unknown_member_id, coordinator.generation)
        assert await coordinator.poll(None)
        assert recorder.calls == [("assigned", [0, 1]), ("lost", [0, 1]), ("assigned", [0, 1])]
        # Nothing was committed for partitions that may have a new owner.
        assert broker.requests("OffsetCommit") == []
        await coordinator.close(1)

    run(scenario)


def test_an_exception_in_a_hook_is_raised_after_the_rebalance() -> None:
    class Failing(RebalanceListener):
        def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
            raise ValueError("boom")

    async def scenario() -> None:
        broker = FakeBroker()
        coordinator, subscriptions = make_coordinator(broker, Failing())
        with pytest.raises(ValueError, match="boom"):
            await coordinator.poll(None)
        assert coordinator.state is MemberState.STABLE
        assert subscriptions.assigned_partitions()
        assert await coordinator.poll(None)
        await coordinator.close(1)

    run(scenario)


# -- heartbeats ---------------------------------------------------------------


def test_heartbeats_run_without_polls() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)
        await asyncio.sleep(0.2)
        assert len(broker.requests("Heartbeat")) >= 4
        await coordinator.close(1)

    run(scenario)


def test_rebalance_in_progress_from_heartbeat_asks_for_a_rejoin() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)
        broker.queue("Heartbeat", heartbeat(ErrorCode.rebalance_in_progress))
        await until(lambda: coordinator.rejoin_needed)
        assert coordinator.generation.generation_id == 1  # still a member
        assert await coordinator.poll(None)
        assert coordinator.generation.generation_id == 2
        await coordinator.close(1)

    run(scenario)


def test_illegal_generation_keeps_the_member_id_unknown_member_forgets_it() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)
        broker.queue("Heartbeat", heartbeat(ErrorCode.illegal_generation))
        await until(lambda: coordinator.rejoin_needed)
        assert coordinator.generation.generation_id == -1
        assert coordinator.generation.member_id == "member-1"
        assert coordinator.state is MemberState.UNJOINED
        assert await coordinator.poll(None)
        broker.queue("Heartbeat", heartbeat(ErrorCode.unknown_member_id))
        await until(lambda: coordinator.rejoin_needed)
        assert coordinator.generation.member_id == ""
        await coordinator.close(1)

    run(scenario)


def test_an_error_for_an_older_generation_is_ignored() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)
        old = coordinator.generation
        coordinator.request_rejoin("test")
        assert await coordinator.poll(None)
        coordinator.handle_heartbeat_error(ErrorCode.illegal_generation, old)
        assert coordinator.state is MemberState.STABLE
        assert not coordinator.rejoin_needed
        await coordinator.close(1)

    run(scenario)


def test_fenced_instance_from_heartbeat_is_raised_by_the_next_poll() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker, **{"group.instance.id": "i1"})
        broker.queue("Heartbeat", heartbeat(ErrorCode.fenced_instance_id))
        await until(lambda: coordinator.fatal_error is not None)
        with pytest.raises(FencedInstanceIdError):
            await coordinator.poll(None)
        await coordinator.close(1)

    run(scenario)


@pytest.mark.parametrize("error", [ErrorCode.not_coordinator, ErrorCode.coordinator_not_available])
def test_heartbeat_to_a_moved_coordinator_rediscovers_it(error: ErrorCode) -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)
        broker.queue("Heartbeat", heartbeat(error))
        await until(lambda: len(broker.requests("FindCoordinator")) == 2)
        await until(lambda: not coordinator.link.unknown())
        assert coordinator.state is MemberState.STABLE
        await coordinator.close(1)

    run(scenario)


def test_a_lost_coordinator_connection_is_rediscovered() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)
        broker.queue("Heartbeat", ConnectionClosed("gone"))
        await until(lambda: len(broker.requests("FindCoordinator")) == 2)
        await coordinator.close(1)

    run(scenario)


def test_a_member_that_stops_polling_leaves_the_group() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        recorder = Recorder()
        coordinator, _ = make_coordinator(broker, recorder, **{"max.poll.interval.ms": 100})
        assert await coordinator.poll(None)
        await until(lambda: bool(broker.requests("LeaveGroup")), 2)
        assert coordinator.state is MemberState.UNJOINED
        assert coordinator.generation.member_id == ""
        assert await coordinator.poll(None)  # rejoins; its partitions were lost meanwhile
        assert recorder.calls[:2] == [("assigned", [0, 1, 2, 3]), ("lost", [0, 1, 2, 3])]
        await coordinator.close(1)

    run(scenario)


def test_a_static_member_that_stops_polling_sends_no_leave() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(
            broker, **{"max.poll.interval.ms": 100, "group.instance.id": "i1"}
        )
        await until(lambda: coordinator.state is MemberState.UNJOINED, 2)
        assert broker.requests("LeaveGroup") == []
        await coordinator.close(1)
        assert broker.requests("LeaveGroup") == []

    run(scenario)


# -- committing ---------------------------------------------------------------

OFFSETS = {T(0): OffsetAndMetadata(5)}


def _deadline() -> float:
    return asyncio.get_running_loop().time() + 2


@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_coordinator,
        ErrorCode.request_timed_out,
    ],
)
def test_retriable_commit_errors_are_retried(error: ErrorCode) -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)
        broker.queue("OffsetCommit", lambda r: committed(r, error))
        await coordinator.committer.commit(OFFSETS, coordinator._clock() + 2)
        assert len(broker.requests("OffsetCommit")) == 2
        rediscovered = error in (ErrorCode.not_coordinator, ErrorCode.request_timed_out)
        assert len(broker.requests("FindCoordinator")) == (2 if rediscovered else 1)
        await coordinator.close(1)

    run(scenario)


def test_commit_during_a_rebalance_fails_and_rejoins() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)
        broker.queue("OffsetCommit", lambda r: committed(r, ErrorCode.rebalance_in_progress))
        with pytest.raises(RebalanceInProgressError):
            await coordinator.committer.commit(OFFSETS, coordinator._clock() + 2)
        assert coordinator.rejoin_needed
        await coordinator.close(1)

    run(scenario)


@pytest.mark.parametrize("error", [ErrorCode.illegal_generation, ErrorCode.unknown_member_id])
def test_commit_from_a_replaced_member_fails_and_resets_the_generation(error: ErrorCode) -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)
        broker.queue("OffsetCommit", lambda r: committed(r, error))
        with pytest.raises(CommitFailedError):
            await coordinator.committer.commit(OFFSETS, coordinator._clock() + 2)
        assert coordinator.generation.generation_id == -1
        assert coordinator.rejoin_needed
        await coordinator.close(1)

    run(scenario)


def test_commit_from_a_fenced_instance_is_fatal() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker, **{"group.instance.id": "i1"})
        broker.queue("OffsetCommit", lambda r: committed(r, ErrorCode.fenced_instance_id))
        with pytest.raises(FencedInstanceIdError):
            await coordinator.committer.commit(OFFSETS, coordinator._clock() + 2)
        await coordinator.close(1)

    run(scenario)


def test_commit_between_generations_is_refused_without_asking() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)
        coordinator.state = MemberState.COMPLETING_REBALANCE
        with pytest.raises(RebalanceInProgressError):
            await coordinator.committer.commit(OFFSETS, coordinator._clock() + 2)
        coordinator.state = MemberState.UNJOINED
        with pytest.raises(CommitFailedError):
            await coordinator.committer.commit(OFFSETS, coordinator._clock() + 2)
        assert broker.requests("OffsetCommit") == []
        coordinator.state = MemberState.STABLE
        await coordinator.close(1)

    run(scenario)


def test_commits_carry_the_generation_and_member() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker, **{"group.instance.id": "i1"})
        await coordinator.committer.commit(OFFSETS, coordinator._clock() + 2)
        request = broker.requests("OffsetCommit")[-1]
        assert request.generation_id_or_member_epoch == 1
        assert request.member_id == "member-1"
        assert request.group_instance_id == "i1"
        assert request.topics[0].partitions[0].committed_offset == 5
        await coordinator.close(1)

    run(scenario)


def test_auto_commit_runs_before_eager_revocation_and_on_close() -> None:
    async def scenario() -> None:
        broker = FakeBroker(partitions=2)
        coordinator, subscriptions = make_coordinator(broker)
        assert await coordinator.poll(None)
        subscriptions.seek(T(0), 7)
        subscriptions.seek(T(1), 9)
        coordinator.request_rejoin("test")
        assert await coordinator.poll(None)
        first = broker.requests("OffsetCommit")[0]
        assert [(p.partition_index, p.committed_offset) for p in first.topics[0].partitions] == [
            (0, 7),
            (1, 9),
        ]
        subscriptions.seek(T(0), 8)
        await coordinator.close(1)
        last = broker.requests("OffsetCommit")[-1]
        assert last.topics[0].partitions[0].committed_offset == 8
        assert broker.requests("LeaveGroup")

    run(scenario)


def _my_commits(broker: FakeBroker) -> list[int]:
    """The generations OFFSETS went out in."""
    return [
        r.generation_id_or_member_epoch
        for r in broker.requests("OffsetCommit")
        if r.topics[0].partitions[0].committed_offset == 5
    ]


@pytest.mark.parametrize(
    "error",
    [ErrorCode.coordinator_not_available, ErrorCode.coordinator_load_in_progress],
    ids=lambda e: e.name,
)
def test_a_commit_retried_after_a_rejoin_fails_instead_of_taking_the_new_generation(
    error: ErrorCode,
) -> None:
    """A commit belongs to the generation it was made in. Once the member has
    rejoined, the partitions may have moved and their new owner committed newer
    offsets: the retry must fail, not overwrite those under the new generation."""

    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)

        async def rejoin_meanwhile(request: Any) -> Any:
            coordinator.request_rejoin("the group rebalanced while the commit was in flight")
            assert await coordinator.poll(None)
            assert coordinator.generation.generation_id == 2
            return committed(request, error)

        broker.queue("OffsetCommit", rejoin_meanwhile)
        with pytest.raises(CommitFailedError):
            await coordinator.committer.commit(OFFSETS, _deadline())
        assert _my_commits(broker) == [1]
        # The member itself stays in the group, in its new generation.
        assert coordinator.state is MemberState.STABLE
        assert coordinator.generation.generation_id == 2
        await coordinator.close(1)

    run(scenario)


def test_a_commit_retried_during_a_rebalance_fails_with_rebalance_in_progress() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)

        def rebalance_meanwhile(request: Any) -> Any:
            coordinator.state = MemberState.PREPARING_REBALANCE
            return committed(request, ErrorCode.coordinator_load_in_progress)

        broker.queue("OffsetCommit", rebalance_meanwhile)
        with pytest.raises(RebalanceInProgressError):
            await coordinator.committer.commit(OFFSETS, _deadline())
        assert _my_commits(broker) == [1]
        coordinator.state = MemberState.STABLE
        await coordinator.close(1)

    run(scenario)


def test_an_auto_commit_made_before_a_rejoin_is_not_sent_in_the_new_generation() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator, subscriptions = make_coordinator(broker, **{"auto.commit.interval.ms": 0})
        assert await coordinator.poll(None)
        subscriptions.seek(T(0), 5)
        broker.sent.clear()
        # The auto-commit is made now, in generation 1; a rejoin completes
        # before its task gets to send it.
        coordinator.maybe_auto_commit_async(coordinator._clock())
        coordinator.generation = Generation(2, "member-1", "range")
        task = coordinator.auto_commit.task
        assert task is not None
        await task
        assert _my_commits(broker) == []
        await coordinator.close(1)

    run(scenario)


# -- owning tasks ---------------------------------------------------------------


def test_close_ends_a_heartbeat_still_waiting_for_its_answer() -> None:
    async def scenario() -> None:
        before = asyncio.all_tasks()
        broker = FakeBroker()
        coordinator = await _joined(broker)
        never: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        broker.queue("Heartbeat", lambda r: never)
        await until(lambda: len(broker.requests("Heartbeat")) == 1)
        await coordinator.close(1)
        assert asyncio.all_tasks() == before

    run(scenario)


def test_a_heartbeat_that_fails_unexpectedly_is_raised_from_the_next_poll() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker)
        broker.queue("Heartbeat", ValueError("undecodable answer"))
        await until(lambda: len(broker.requests("Heartbeat")) == 1)
        await asyncio.sleep(0.001)
        with pytest.raises(ValueError, match="undecodable answer"):
            await coordinator.poll(0)
        assert await coordinator.poll(0)  # raised once; heartbeats go on
        await until(lambda: len(broker.requests("Heartbeat")) >= 2)
        await coordinator.close(1)

    run(scenario)


def test_a_heartbeat_task_that_failed_is_started_again_by_the_next_poll() -> None:
    async def scenario() -> None:
        broker = FakeBroker()
        coordinator = await _joined(broker, **{"max.poll.interval.ms": 100})
        broker.queue("LeaveGroup", ValueError("undecodable answer"))
        await until(lambda: bool(broker.requests("LeaveGroup")))
        await asyncio.sleep(0.001)
        with pytest.raises(ValueError, match="undecodable answer"):
            await coordinator.poll(0)
        assert await coordinator.poll(0)
        sent = len(broker.requests("Heartbeat"))
        await until(lambda: len(broker.requests("Heartbeat")) > sent)
        await coordinator.close(1)

    run(scenario)
