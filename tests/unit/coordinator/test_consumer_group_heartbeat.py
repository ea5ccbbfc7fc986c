"""KIP-848 consumer groups on virtual time: joining, reconciling, leaving,
timeouts, static members and epochs, as a client sees them through
ConsumerGroupHeartbeat."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer import ConsumerGroupState, HeartbeatRequest, MemberState
from kgroups.coordinator.consumer.records import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    TARGET_ASSIGNMENT_METADATA,
    decode_key,
)

from .consumer_group_harness import BAR, FOO, Harness, partitions, plain, snapshot

ALL_FOO = {FOO: {0, 1, 2, 3, 4, 5}}


def two_members_reconciled(h: Harness) -> None:
    h.join("a")
    h.join("b")
    a_target = plain(h.group.target_of("a"))
    h.owning("a", 1, ALL_FOO)
    h.owning("a", 1, a_target)
    h.owning("b", 2, {})
    assert h.group.state is ConsumerGroupState.STABLE


def test_a_member_joining_an_empty_group_gets_every_partition() -> None:
    h = Harness()
    answer = h.join("a")
    assert answer.error_code is ErrorCode.none
    assert answer.member_id == "a"
    assert answer.member_epoch == 1
    assert answer.heartbeat_interval_ms == 5_000
    assert partitions(answer) == ALL_FOO
    assert h.group.state is ConsumerGroupState.STABLE
    assert (h.group.group_epoch, h.group.assignment_epoch) == (1, 1)
    # Kafka's order: subscription, group epoch, target, assignment epoch, current.
    assert [decode_key(k).record_type for k, _ in h.log] == [
        MEMBER_METADATA,
        GROUP_METADATA,
        TARGET_ASSIGNMENT_MEMBER,
        TARGET_ASSIGNMENT_METADATA,
        CURRENT_MEMBER_ASSIGNMENT,
    ]


def test_the_coordinator_names_a_member_that_sends_no_id() -> None:
    h = Harness()
    answer = h.join("")
    assert answer.member_id == "generated-1"
    assert h.heartbeat("generated-1", 1).error_code is ErrorCode.none


def test_a_stable_member_heartbeat_writes_nothing_and_repeats_no_assignment() -> None:
    h = Harness()
    h.join("a")
    before = len(h.log)
    answer = h.heartbeat("a", 1)
    assert answer.error_code is ErrorCode.none
    assert answer.member_epoch == 1
    assert answer.assignment is None
    assert len(h.log) == before
    # A full request (as after an error) gets the assignment again.
    full = h.heartbeat(
        "a",
        1,
        rebalance_timeout_ms=60_000,
        subscribed_topic_names=["foo"],
        owned_partitions=list(ALL_FOO.items()),
    )
    assert partitions(full) == ALL_FOO
    assert len(h.log) == before


def test_second_member_gets_partitions_only_after_the_first_revokes_them() -> None:
    h = Harness()
    h.join("a")
    b = h.join("b")
    # The group epoch moved on; b is at the new epoch but everything is a's.
    assert b.member_epoch == 2
    assert partitions(b) == {}
    assert h.group.members["b"].state is MemberState.UNRELEASED_PARTITIONS
    assert h.group.state is ConsumerGroupState.RECONCILING
    a_target = plain(h.group.target_of("a"))
    b_target = plain(h.group.target_of("b"))
    assert sorted(a_target[FOO] | b_target[FOO]) == [0, 1, 2, 3, 4, 5]
    assert len(a_target[FOO]) == len(b_target[FOO]) == 3

    # a is told to keep only its target; its epoch stays until it revokes.
    a = h.owning("a", 1, ALL_FOO)
    assert a.member_epoch == 1
    assert partitions(a) == a_target
    assert h.group.members["a"].state is MemberState.UNREVOKED_PARTITIONS

    # b asks again before a revoked: still nothing.
    assert h.owning("b", 2, {}).member_epoch == 2
    assert h.group.members["b"].assigned_partitions == {}

    # a still reports the partitions: nothing moves.
    assert h.owning("a", 1, ALL_FOO).member_epoch == 1

    # a reports them gone: it moves to epoch 2, and b gets them.
    a = h.owning("a", 1, a_target)
    assert a.member_epoch == 2
    assert h.group.members["a"].state is MemberState.STABLE
    b = h.owning("b", 2, {})
    assert partitions(b) == b_target
    assert h.group.members["b"].state is MemberState.STABLE
    assert h.group.state is ConsumerGroupState.STABLE


def test_a_member_leaving_hands_its_partitions_to_the_others() -> None:
    h = Harness()
    two_members_reconciled(h)
    left = h.heartbeat("b", -1)
    assert (left.error_code, left.member_id, left.member_epoch) == (ErrorCode.none, "b", -1)
    assert "b" not in h.group.members
    assert h.group.group_epoch == 3
    assert h.group.state is ConsumerGroupState.ASSIGNING
    a = h.owning("a", 2, plain(h.group.members["a"].assigned_partitions))
    assert a.member_epoch == 3
    assert partitions(a) == ALL_FOO
    assert h.group.state is ConsumerGroupState.STABLE
    # A heartbeat from the departed member is refused.
    assert h.heartbeat("b", 2).error_code is ErrorCode.unknown_member_id


def test_the_last_member_leaving_empties_the_group() -> None:
    h = Harness()
    h.join("a")
    h.heartbeat("a", -1)
    assert h.group.state is ConsumerGroupState.EMPTY
    assert h.group.partition_epochs == {}


def test_a_silent_member_is_fenced_after_the_session_timeout() -> None:
    h = Harness()
    two_members_reconciled(h)
    for _ in range(8):  # a keeps heartbeating, b is silent
        h.advance(5_000)
        h.heartbeat("a", 2)
    h.advance(4_999)
    assert "b" in h.group.members
    h.advance(1)  # 45 s after b's last heartbeat
    assert "b" not in h.group.members
    assert h.group.group_epoch == 3
    a = h.owning("a", 2, plain(h.group.members["a"].assigned_partitions))
    assert partitions(a) == ALL_FOO
    assert h.heartbeat("b", 2).error_code is ErrorCode.unknown_member_id


def test_the_session_timeout_is_configurable() -> None:
    h = Harness(session_timeout_ms=10_000)
    h.join("a")
    h.advance(9_999)
    assert "a" in h.group.members
    h.advance(1)
    assert "a" not in h.group.members


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced() -> None:
    h = Harness()
    h.join("a", rebalance_timeout_ms=10_000)
    h.join("b")
    h.owning("a", 1, ALL_FOO)  # told to revoke
    for _ in range(3):  # it keeps its session alive but never revokes
        h.advance(3_000)
        h.owning("a", 1, ALL_FOO)
        h.owning("b", 2, {})
    assert h.group.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    h.advance(1_000)
    assert "a" not in h.group.members
    assert h.owning("a", 1, ALL_FOO).error_code is ErrorCode.unknown_member_id
    b = h.owning("b", 2, {})
    assert partitions(b) == ALL_FOO


def test_revoking_in_time_cancels_the_rebalance_timeout() -> None:
    h = Harness()
    h.join("a", rebalance_timeout_ms=10_000)
    h.join("b")
    h.owning("a", 1, ALL_FOO)
    h.advance(5_000)
    h.owning("a", 1, plain(h.group.target_of("a")))
    h.advance(8_000)
    assert "a" in h.group.members


def test_epoch_errors() -> None:
    h = Harness()
    two_members_reconciled(h)
    a_owned = plain(h.group.members["a"].assigned_partitions)
    # Ahead of the coordinator.
    assert h.owning("a", 3, a_owned).error_code is ErrorCode.fenced_member_epoch
    # The previous epoch with a subset of the assignment: the answer with the
    # new epoch may have been lost, so it is accepted.
    answer = h.owning("a", 1, a_owned)
    assert (answer.error_code, answer.member_epoch) == (ErrorCode.none, 2)
    # The previous epoch claiming partitions it does not have: fenced.
    assert h.owning("a", 1, ALL_FOO).error_code is ErrorCode.fenced_member_epoch
    # The previous epoch without owned partitions: fenced.
    assert h.heartbeat("a", 1).error_code is ErrorCode.fenced_member_epoch
    # Older still.
    assert h.join("a").error_code is ErrorCode.fenced_member_epoch
    # Unknown member, unknown group.
    assert h.heartbeat("zz", 2).error_code is ErrorCode.unknown_member_id
    records, answer = h.coordinator.heartbeat(
        HeartbeatRequest(group_id="other", member_id="a", member_epoch=1), h.topics, h.now
    )
    assert (records, answer.error_code) == ([], ErrorCode.group_id_not_found)
    # None of this changed the group.
    assert h.group.state is ConsumerGroupState.STABLE


def test_malformed_heartbeats_are_invalid_requests() -> None:
    h = Harness()
    invalid = ErrorCode.invalid_request
    # A first heartbeat without a rebalance timeout, subscription or empty owned list.
    assert (
        h.heartbeat("a", 0, subscribed_topic_names=["foo"], owned_partitions=[]).error_code
        is invalid
    )
    assert h.heartbeat("a", 0, rebalance_timeout_ms=1, owned_partitions=[]).error_code is invalid
    assert (
        h.heartbeat("a", 0, rebalance_timeout_ms=1, subscribed_topic_names=["foo"]).error_code
        is invalid
    )
    assert h.heartbeat("", 3).error_code is invalid
    assert h.heartbeat("a", -3).error_code is invalid
    assert h.heartbeat("a", -2).error_code is invalid  # static leave without instance id
    assert h.join("a", instance_id="").error_code is invalid
    assert h.join("a", server_assignor="sticky").error_code is ErrorCode.unsupported_assignor
    assert h.log == []


def test_the_group_max_size_refuses_new_members_only() -> None:
    h = Harness(max_size=1)
    h.join("a")
    assert h.join("b").error_code is ErrorCode.group_max_size_reached
    assert h.heartbeat("a", 1).error_code is ErrorCode.none


def test_a_subscription_change_moves_the_group_epoch() -> None:
    h = Harness()
    h.join("a")
    answer = h.heartbeat("a", 1, subscribed_topic_names=["foo", "bar"])
    assert answer.member_epoch == 2
    assert partitions(answer) == {FOO: {0, 1, 2, 3, 4, 5}, BAR: {0, 1, 2}}
    assert h.group.group_epoch == 2


def test_an_unchanged_subscription_sent_again_changes_nothing() -> None:
    h = Harness()
    h.join("a")
    before = len(h.log)
    assert h.heartbeat("a", 1, subscribed_topic_names=["foo"]).member_epoch == 1
    assert len(h.log) == before


def test_partitions_added_to_a_subscribed_topic_are_assigned() -> None:
    h = Harness()
    h.join("a")
    h.topics.put("foo", 8)
    answer = h.owning("a", 1, ALL_FOO)
    assert answer.member_epoch == 2
    assert partitions(answer) == {FOO: set(range(8))}


def test_a_topic_change_the_group_does_not_subscribe_to_moves_nothing() -> None:
    h = Harness()
    h.join("a")
    h.topics.put("unrelated", 4)
    assert h.owning("a", 1, ALL_FOO).member_epoch == 1
    assert h.group.group_epoch == 1


def test_a_deleted_topic_is_revoked() -> None:
    h = Harness()
    h.join("a", topics=("foo", "bar"))
    h.topics.delete("bar")
    answer = h.owning("a", 1, {FOO: range(6), BAR: range(3)})
    assert partitions(answer) == ALL_FOO
    assert h.group.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    answer = h.owning("a", 1, ALL_FOO)
    assert answer.member_epoch == 2
    assert h.group.state is ConsumerGroupState.STABLE


def test_a_subscription_to_a_topic_created_later() -> None:
    h = Harness()
    answer = h.join("a", topics=("later",))
    assert (answer.member_epoch, partitions(answer)) == (1, {})
    info = h.topics.put("later", 2)
    answer = h.owning("a", 1, {})
    assert (answer.member_epoch, partitions(answer)) == (2, {info.topic_id: {0, 1}})


def test_static_member_leaving_keeps_its_partitions_until_replaced() -> None:
    h = Harness()
    h.join("a1", instance_id="i")
    h.join("b")
    h.owning("a1", 1, ALL_FOO)
    a_target = plain(h.group.target_of("a1"))
    h.owning("a1", 1, a_target)
    h.owning("b", 2, {})
    assert h.group.state is ConsumerGroupState.STABLE

    left = h.heartbeat("a1", -2, instance_id="i")
    assert (left.error_code, left.member_epoch) == (ErrorCode.none, -2)
    assert h.group.group_epoch == 2  # nothing moves: it is expected back
    assert plain(h.group.members["a1"].assigned_partitions) == a_target

    # Its replacement takes over its partitions at once, at the group's epoch.
    a2 = h.join("a2", instance_id="i")
    assert (a2.error_code, a2.member_epoch) == (ErrorCode.none, 2)
    assert partitions(a2) == a_target
    assert "a1" not in h.group.members
    assert h.group.static_members == {"i": "a2"}
    assert h.group.state is ConsumerGroupState.STABLE
    assert h.heartbeat("a1", 2, instance_id="i").error_code is ErrorCode.fenced_instance_id


def test_an_instance_id_still_in_use_is_not_released() -> None:
    h = Harness()
    h.join("a1", instance_id="i")
    assert h.join("a2", instance_id="i").error_code is ErrorCode.unreleased_instance_id
    assert h.group.static_members == {"i": "a1"}


def test_a_static_member_that_left_and_never_came_back_is_fenced_after_its_session() -> None:
    h = Harness()
    h.join("a1", instance_id="i")
    h.heartbeat("a1", -2, instance_id="i")
    h.advance(45_000)
    assert h.group.members == {}
    assert h.group.state is ConsumerGroupState.EMPTY


def test_a_static_member_leaving_for_good() -> None:
    h = Harness()
    h.join("a1", instance_id="i")
    h.heartbeat("a1", -1, instance_id="i")
    assert h.group.members == {}
    assert h.heartbeat("x", -2, instance_id="i").error_code is ErrorCode.unknown_member_id


def test_members_ask_for_a_server_assignor() -> None:
    h = Harness()
    h.join("a", topics=("foo", "bar"), server_assignor="range")
    h.join("b", topics=("foo", "bar"), server_assignor="range")
    # range: per topic, contiguous ranges in member order.
    assert plain(h.group.target_of("a")) == {FOO: {0, 1, 2}, BAR: {0, 1}}
    assert plain(h.group.target_of("b")) == {FOO: {3, 4, 5}, BAR: {2}}


def test_replaying_the_records_rebuilds_the_same_groups() -> None:
    h = Harness()
    h.join("a", instance_id="ia")
    h.join("b")
    h.owning("a", 1, ALL_FOO)  # a must revoke; b waits
    mid = snapshot(h.group)
    assert snapshot(h.replayed().groups["g"]) == mid
    h.owning("a", 1, plain(h.group.target_of("a")))
    h.owning("b", 2, {})
    h.heartbeat("a", 2, subscribed_topic_names=["foo", "bar"])
    h.join("c")
    h.heartbeat("b", -1)
    h.heartbeat("a", -2, instance_id="ia")
    assert snapshot(h.replayed().groups["g"]) == snapshot(h.group)


def test_after_a_restart_members_carry_on_and_silent_ones_time_out() -> None:
    h = Harness()
    two_members_reconciled(h)
    before = snapshot(h.group)
    restarted = Harness()
    for key, value in h.log:
        restarted.coordinator.table.replay_bytes(key, value)
    restarted.log = list(h.log)
    restarted.coordinator.on_loaded(0)
    assert snapshot(restarted.group) == before
    # a carries on at its epoch; its first heartbeat checks the topics once.
    answer = restarted.heartbeat("a", 2)
    assert (answer.error_code, answer.member_epoch) == (ErrorCode.none, 2)
    assert restarted.group.group_epoch == 2
    for _ in range(9):
        restarted.advance(5_000)
        restarted.heartbeat("a", 2)
    assert "b" not in restarted.group.members


def test_deleting_an_empty_group_writes_its_tombstones() -> None:
    h = Harness()
    h.join("a")
    h.heartbeat("a", -1)
    records = h.coordinator.delete_group("g")
    h.log.extend(records)
    assert all(value is None for _, value in records)
    assert h.coordinator.table.get("g") is None
    assert h.replayed().get("g") is None


def test_a_static_member_rejoining_without_leaving_is_refused() -> None:
    h = Harness()
    h.join("a1", instance_id="i")
    # Same member id, epoch 0, while the instance is still in the group.
    assert h.join("a1", instance_id="i").error_code is ErrorCode.unreleased_instance_id


def test_a_leave_that_drops_a_topic_moves_the_epoch_once() -> None:
    h = Harness()
    h.join("a", topics=("foo",))
    h.join("b", topics=("bar",))
    h.owning("a", 1, {FOO: range(6)})
    h.owning("b", 2, {})
    assert h.group.state is ConsumerGroupState.STABLE
    h.heartbeat("b", -1)
    assert h.group.group_epoch == 3
    answer = h.owning("a", 2, {FOO: range(6)})
    assert (answer.member_epoch, h.group.group_epoch) == (3, 3)


def test_a_member_in_a_state_a_newer_coordinator_wrote_must_start_over() -> None:
    h = Harness()
    h.join("a")
    state = h.group.members["a"]
    key, value = next(
        (k, v) for k, v in h.log if decode_key(k).record_type == CURRENT_MEMBER_ASSIGNMENT
    )
    # The same record with a member state byte this coordinator does not know.
    assert value is not None
    h.coordinator.table.replay_bytes(key, value[:10] + b"\x05" + value[11:])
    assert state.state is MemberState.UNKNOWN
    before = snapshot(h.group)
    answer = h.owning("a", 1, ALL_FOO)
    assert answer.error_code is ErrorCode.fenced_member_epoch
    assert snapshot(h.group) == before
    # Owning nothing, it is reconciled from scratch.
    answer = h.owning("a", 1, {})
    assert (answer.error_code, answer.member_epoch) == (ErrorCode.none, 1)
    assert h.group.members["a"].state is MemberState.STABLE
    assert h.group.state is ConsumerGroupState.STABLE
