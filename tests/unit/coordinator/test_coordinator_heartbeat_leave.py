"""Heartbeat and LeaveGroup: validation, batch leaves, leader re-election."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.coordinator import GroupState

from .harness import Harness


def test_heartbeat_errors() -> None:
    h = Harness()
    (a, _), gen = h.form_group("g", 2)
    assert h.heartbeat("", a, gen) is ErrorCode.invalid_group_id
    assert h.heartbeat("nope", a, gen) is ErrorCode.unknown_member_id
    assert h.heartbeat("g", "stranger", gen) is ErrorCode.unknown_member_id
    assert h.heartbeat("g", a, gen + 1) is ErrorCode.illegal_generation
    assert h.heartbeat("g", a, gen) is ErrorCode.none


def test_unknown_member_comes_before_a_wrong_generation() -> None:
    h = Harness()
    h.form_group("g", 1)
    assert h.heartbeat("g", "stranger", 99) is ErrorCode.unknown_member_id


def test_leave_with_an_empty_group_id() -> None:
    h = Harness()
    response = h.leave("", ("m", None))
    assert response.error_code is ErrorCode.invalid_group_id
    assert response.members == ()


def test_leave_of_an_unknown_group_fails_each_member() -> None:
    h = Harness()
    response = h.leave("nope", ("a", None), ("", "i"))
    assert response.error_code is ErrorCode.none
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in response.members] == [
        ("a", None, ErrorCode.unknown_member_id),
        ("", "i", ErrorCode.unknown_member_id),
    ]


def test_batch_leave_answers_each_member() -> None:
    h = Harness()
    (a, b, c), _ = h.form_group("g", 3)
    response = h.leave("g", (a, None), ("stranger", None), (c, None))
    assert [m.error_code for m in response.members] == [
        ErrorCode.none,
        ErrorCode.unknown_member_id,
        ErrorCode.none,
    ]
    group = h.shard.group("g")
    assert group is not None
    assert [m.member_id for m in group.members] == [b]
    assert group.state is GroupState.PREPARING_REBALANCE


def test_old_versions_see_the_first_member_error_at_the_top() -> None:
    h = Harness()
    h.form_group("g", 1)
    response = h.leave("g", ("stranger", None), version=2)
    assert response.error_code is ErrorCode.unknown_member_id
    response = h.leave("g", ("client-1", None), version=0)
    assert response.error_code is ErrorCode.none


def test_a_leaving_leader_hands_over_to_another_member() -> None:
    h = Harness()
    (a, b, c), gen = h.form_group("g", 3)
    h.leave("g", (a, None))
    tb, tc = h.join("g", b), h.join("g", c)
    assert h.reply(tb).leader == h.reply(tc).leader == b
    assert h.reply(tb).generation_id == gen + 1
    assert {m.member_id for m in h.reply(tb).members} == {b, c}


def test_when_the_last_member_leaves_the_group_becomes_empty_and_is_stored() -> None:
    h = Harness()
    (a,), _gen = h.form_group("g", 1)
    records_before = len(h.log)
    h.leave("g", (a, None))
    group = h.shard.group("g")
    assert group is not None
    assert (group.state, group.generation_id, group.protocol_name) == (GroupState.EMPTY, 2, None)
    assert len(h.log) == records_before + 1  # the Empty generation's GroupMetadata record


def test_a_pending_member_can_leave() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1)
    pending = h.reply(h.join("g")).member_id
    rejoin = h.join("g", a)
    assert h.reply(rejoin) is None  # waiting for the pending member
    response = h.leave("g", (pending, None))
    assert response.members[0].error_code is ErrorCode.none
    assert h.reply(rejoin).generation_id == gen + 1


def test_a_parked_join_of_a_removed_member_is_told_to_start_over() -> None:
    h = Harness()
    (a, _b), _ = h.form_group("g", 2)
    parked = h.join("g", a)
    h.leave("g", (a, None))
    response = h.reply(parked)
    assert response.error_code is ErrorCode.unknown_member_id
    assert response.member_id == ""
