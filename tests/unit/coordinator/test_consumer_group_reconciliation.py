"""One reconciliation step (Kafka's CurrentAssignmentBuilder), on its own."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from types import MappingProxyType

import pytest

from kgroups.coordinator.consumer.member import ConsumerGroupMember, MemberState
from kgroups.coordinator.consumer.reconciliation import FencedMemberEpoch, reconcile
from kgroups.coordinator.consumer_assignors.spec import Assignment

T = uuid.UUID(int=7)


def a(*partitions: int) -> Assignment:
    return MappingProxyType({T: frozenset(partitions)}) if partitions else MappingProxyType({})


def owners(epochs: Mapping[int, int]) -> object:
    return lambda topic_id, partition: epochs.get(partition, -1)


def member(
    state: MemberState, epoch: int, assigned: Assignment, pending: Assignment | None = None
) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        "m",
        member_epoch=epoch,
        previous_member_epoch=epoch - 1,
        state=state,
        assigned_partitions=assigned,
        partitions_pending_revocation=a() if pending is None else pending,
    )


def test_a_stable_member_at_the_target_epoch_stays() -> None:
    m = member(MemberState.STABLE, 5, a(1, 2))
    step = reconcile(m, 5, a(1, 2, 3), owners({}), None)  # type: ignore[arg-type]
    assert not step.differs_from(m)


def test_new_free_partitions_are_given_at_the_target_epoch() -> None:
    m = member(MemberState.STABLE, 5, a(1))
    step = reconcile(m, 6, a(1, 2), owners({1: 5}), [(T, [1])])  # type: ignore[arg-type]
    assert (step.state, step.member_epoch, step.previous_member_epoch) == (
        MemberState.STABLE,
        6,
        5,
    )
    assert step.assigned_partitions == a(1, 2)


def test_partitions_owned_elsewhere_are_withheld() -> None:
    m = member(MemberState.STABLE, 5, a(1))
    step = reconcile(m, 6, a(1, 2, 3), owners({1: 5, 3: 5}), [(T, [1])])  # type: ignore[arg-type]
    assert (step.state, step.member_epoch) == (MemberState.UNRELEASED_PARTITIONS, 6)
    assert step.assigned_partitions == a(1, 2)
    released = member(MemberState.UNRELEASED_PARTITIONS, 6, a(1, 2))
    step = reconcile(released, 6, a(1, 2, 3), owners({1: 6, 2: 6}), [(T, [1, 2])])  # type: ignore[arg-type]
    assert (step.state, step.assigned_partitions) == (MemberState.STABLE, a(1, 2, 3))


def test_revocation_comes_first_and_keeps_the_epoch() -> None:
    m = member(MemberState.STABLE, 5, a(1, 2))
    step = reconcile(m, 6, a(2, 3), owners({1: 5, 2: 5}), [(T, [1, 2])])  # type: ignore[arg-type]
    assert (step.state, step.member_epoch) == (MemberState.UNREVOKED_PARTITIONS, 5)
    assert step.assigned_partitions == a(2)  # 3 is not given yet
    assert step.partitions_pending_revocation == a(1)


def test_owned_partitions_not_reported_means_not_revoked() -> None:
    m = member(MemberState.UNREVOKED_PARTITIONS, 5, a(2), pending=a(1))
    step = reconcile(m, 6, a(2, 3), owners({1: 5, 2: 5}), None)  # type: ignore[arg-type]
    assert not step.differs_from(m)
    step = reconcile(m, 6, a(2, 3), owners({2: 5}), [(T, [2])])  # type: ignore[arg-type]
    assert (step.state, step.member_epoch, step.previous_member_epoch) == (
        MemberState.STABLE,
        6,
        5,
    )
    assert step.assigned_partitions == a(2, 3)


def test_a_member_that_already_dropped_the_partitions_skips_the_revocation() -> None:
    m = member(MemberState.STABLE, 5, a(1, 2))
    step = reconcile(m, 6, a(2), owners({1: 5, 2: 5}), [(T, [2])])  # type: ignore[arg-type]
    assert (step.state, step.member_epoch, step.assigned_partitions) == (
        MemberState.STABLE,
        6,
        a(2),
    )


def test_a_member_in_an_unknown_state_is_fenced_unless_it_owns_nothing() -> None:
    m = member(MemberState.UNKNOWN, 5, a(1))
    with pytest.raises(FencedMemberEpoch):
        reconcile(m, 6, a(1), owners({}), [(T, [1])])  # type: ignore[arg-type]
    with pytest.raises(FencedMemberEpoch):
        reconcile(m, 6, a(1), owners({}), None)  # type: ignore[arg-type]
    step = reconcile(m, 6, a(1), owners({1: 5}), [])  # type: ignore[arg-type]
    assert (step.state, step.member_epoch) == (MemberState.STABLE, 6)
