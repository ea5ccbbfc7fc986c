"""JoinGroup: validation, the two-step join, protocols, sizes, leaders, rejoins."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.coordinator import CoordinatorConfig, GroupState

from .harness import Harness


def state(h: Harness, group: str = "g") -> GroupState | None:
    view = h.shard.group(group)
    return None if view is None else view.state


def test_empty_group_id_is_invalid() -> None:
    h = Harness()
    assert h.reply(h.join("")).error_code is ErrorCode.invalid_group_id


def test_session_timeout_must_be_within_the_configured_bounds() -> None:
    h = Harness(CoordinatorConfig(min_session_timeout_ms=6000, max_session_timeout_ms=60_000))
    assert h.reply(h.join("g", session=5999)).error_code is ErrorCode.invalid_session_timeout
    assert h.reply(h.join("g", session=60_001)).error_code is ErrorCode.invalid_session_timeout
    assert h.reply(h.join("g", session=6000)).error_code is ErrorCode.member_id_required
    assert h.reply(h.join("g", session=60_000)).error_code is ErrorCode.member_id_required


def test_a_member_id_for_an_unknown_group_is_rejected_without_creating_it() -> None:
    h = Harness()
    response = h.reply(h.join("g", "stale-id"))
    assert response.error_code is ErrorCode.unknown_member_id
    assert response.member_id == "stale-id"
    assert h.shard.group("g") is None


def test_member_ids_are_the_client_id_and_a_uuid_by_default() -> None:
    from kgroups.coordinator.member import kafka_member_id

    member_id = kafka_member_id("my-client")
    prefix, _, rest = member_id.partition("-")
    assert prefix == "my" and rest.startswith("client-") and len(rest) == len("client-") + 36


def test_v4_and_later_get_a_member_id_to_join_with() -> None:
    h = Harness()
    first = h.reply(h.join("g", client_id="app"))
    assert first.error_code is ErrorCode.member_id_required
    assert first.member_id == "app-1"
    assert first.generation_id == -1
    assert state(h) is GroupState.EMPTY  # only a pending member so far
    second = h.join("g", first.member_id)
    assert h.reply(second) is None  # parked through the initial delay
    assert state(h) is GroupState.PREPARING_REBALANCE
    h.advance(3000)
    response = h.reply(second)
    assert response.error_code is ErrorCode.none
    assert (response.member_id, response.leader, response.generation_id) == ("app-1", "app-1", 1)


def test_before_v4_a_new_member_joins_in_one_step() -> None:
    h = Harness()
    token = h.join("g", version=3)
    assert h.reply(token) is None
    h.advance(3000)
    response = h.reply(token)
    assert response.error_code is ErrorCode.none
    assert response.member_id == "client-1"


def test_join_responses_before_v7_carry_an_empty_protocol_name() -> None:
    h = Harness()
    assert h.reply(h.join("", version=6)).protocol_name == ""
    assert h.reply(h.join("", version=7)).protocol_name is None


def test_a_parked_join_is_answered_in_the_version_it_was_sent_in() -> None:
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    parked = h.join("g", a, version=6)  # the leader rejoins; b has not yet
    h.leave("g", (a, None))
    assert h.reply(parked).error_code is ErrorCode.unknown_member_id
    assert h.reply(parked).protocol_name == ""
    old = h.join("g", b, version=6)
    assert h.reply(old).protocol_name == "range"
    assert h.reply(old).generation_id == gen + 1


def test_v0_uses_the_session_timeout_as_rebalance_timeout() -> None:
    h = Harness()
    a = h.join("g", version=0, session=10_000, rebalance=999_999)
    b = h.join("g", version=0, session=10_000, rebalance=999_999)
    h.advance(6000)
    gen = h.reply(a).generation_id
    leader = h.reply(a).member_id
    h.sync("g", leader, gen, {}, version=0, protocol_type=None, protocol_name=None)
    follower = h.reply(b).member_id
    h.sync("g", follower, gen, version=0, protocol_type=None, protocol_name=None)
    h.heartbeat("g", follower, gen)
    rejoin = h.join("g", leader, version=0)  # the follower never rejoins
    h.advance(9_999)
    assert h.reply(rejoin) is None
    h.heartbeat("g", follower, gen)  # keeps its session, but does not rejoin
    h.advance(1)
    assert h.reply(rejoin).generation_id == gen + 1
    assert [m.member_id for m in h.shard.group("g").members] == [leader]  # type: ignore[union-attr]


def test_protocol_type_and_protocols_are_required() -> None:
    h = Harness()
    assert h.reply(h.join("g", protocol_type="")).error_code is (
        ErrorCode.inconsistent_group_protocol
    )
    assert h.reply(h.join("g", protocols=())).error_code is ErrorCode.inconsistent_group_protocol


def test_new_members_must_share_type_and_a_protocol_with_the_group() -> None:
    h = Harness()
    h.form_group("g", 1, protocols=(("range", b"a"), ("sticky", b"b")))
    other_type = h.reply(h.join("g", protocol_type="connect"))
    assert other_type.error_code is ErrorCode.inconsistent_group_protocol
    assert other_type.member_id == ""
    no_common = h.reply(h.join("g", protocols=(("roundrobin", b""),)))
    assert no_common.error_code is ErrorCode.inconsistent_group_protocol
    assert h.reply(h.join("g", protocols=(("sticky", b""),))).error_code is (
        ErrorCode.member_id_required
    )


def test_a_member_cannot_switch_to_protocols_the_others_lack() -> None:
    h = Harness()
    (_a, b), _ = h.form_group("g", 2)
    response = h.reply(h.join("g", b, protocols=(("roundrobin", b""),)))
    assert response.error_code is ErrorCode.inconsistent_group_protocol
    assert response.member_id == b
    assert state(h) is GroupState.STABLE


def test_the_protocol_most_members_prefer_is_chosen() -> None:
    h = Harness()
    tokens = [
        h.join_new("g", protocols=(("roundrobin", b"1"), ("range", b"2")))[1],
        h.join_new("g", protocols=(("range", b"3"), ("roundrobin", b"4")))[1],
        h.join_new("g", protocols=(("roundrobin", b"5"), ("range", b"6")))[1],
    ]
    h.advance(6000)
    names = {h.reply(t).protocol_name for t in tokens}
    assert names == {"roundrobin"}
    leader = next(h.reply(t) for t in tokens if h.reply(t).member_id == h.reply(t).leader)
    assert [(m.member_id, m.metadata) for m in leader.members] == [
        ("client-1", b"1"),
        ("client-2", b"4"),
        ("client-3", b"5"),
    ]


def test_only_the_leader_gets_the_member_list() -> None:
    h = Harness()
    joins = [h.join_new("g", protocols=(("range", f"m{i}".encode()),)) for i in range(3)]
    h.advance(6000)
    responses = [h.reply(t) for _, t in joins]
    leader = responses[0].leader
    for response in responses:
        assert response.leader == leader
        assert response.protocol_type == "consumer"
        if response.member_id == leader:
            assert {m.member_id for m in response.members} == {m for m, _ in joins}
        else:
            assert response.members == ()


def test_generation_increments_on_each_rebalance() -> None:
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    assert gen == 1
    ta, tb = h.join("g", a), h.join("g", b)
    assert h.reply(ta).generation_id == h.reply(tb).generation_id == 2


def test_the_join_phase_waits_for_a_pending_member() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1)
    pending = h.reply(h.join("g")).member_id  # MEMBER_ID_REQUIRED, not yet joined again
    rejoin = h.join("g", a)
    assert h.reply(rejoin) is None  # the pending member holds the phase open
    second = h.join("g", pending)
    assert h.reply(rejoin).generation_id == h.reply(second).generation_id == gen + 1


def test_a_pending_member_id_with_an_instance_id_is_refused() -> None:
    h = Harness()
    pending = h.reply(h.join("g")).member_id
    response = h.reply(h.join("g", pending, instance="i"))
    assert response.error_code is ErrorCode.unknown_server_error


# -- rejoining without a rebalance -------------------------------------------


def test_an_unchanged_follower_rejoining_a_stable_group_gets_the_current_generation() -> None:
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    response = h.reply(h.join("g", b))
    assert response.error_code is ErrorCode.none
    assert (response.generation_id, response.leader, response.members) == (gen, a, ())
    assert response.skip_assignment is False
    assert state(h) is GroupState.STABLE


def test_the_leader_rejoining_a_stable_group_forces_a_rebalance() -> None:
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    token = h.join("g", a)
    assert h.reply(token) is None
    assert state(h) is GroupState.PREPARING_REBALANCE
    assert h.heartbeat("g", b, gen) is ErrorCode.rebalance_in_progress


def test_a_follower_with_new_metadata_forces_a_rebalance() -> None:
    h = Harness()
    (_a, b), _gen = h.form_group("g", 2)
    assert h.reply(h.join("g", b, protocols=(("range", b"new topics"),))) is None
    assert state(h) is GroupState.PREPARING_REBALANCE


def test_rejoining_unchanged_while_completing_returns_the_same_generation() -> None:
    h = Harness()
    joins = [h.join_new("g") for _ in range(2)]
    h.advance(6000)
    (a, _), (b, _) = joins
    again = h.reply(h.join("g", a))  # the leader lost its JoinGroup response
    assert again.generation_id == 1 and again.leader == a
    assert {m.member_id for m in again.members} == {a, b}
    follower = h.reply(h.join("g", b))
    assert follower.members == ()
    assert state(h) is GroupState.COMPLETING_REBALANCE


def test_changed_metadata_while_completing_restarts_and_fails_parked_syncs() -> None:
    h = Harness()
    joins = [h.join_new("g") for _ in range(2)]
    h.advance(6000)
    (a, _), (b, _) = joins
    parked = h.sync("g", b, 1)
    assert h.reply(parked) is None
    rejoin = h.join("g", a, protocols=(("range", b"changed"),))
    assert h.reply(parked).error_code is ErrorCode.rebalance_in_progress
    assert h.reply(rejoin) is None
    assert state(h) is GroupState.PREPARING_REBALANCE


# -- group.max.size ----------------------------------------------------------


def test_new_members_beyond_the_max_size_are_refused() -> None:
    h = Harness(CoordinatorConfig(max_size=2))
    h.form_group("g", 2)
    response = h.reply(h.join("g", version=3))
    assert response.error_code is ErrorCode.group_max_size_reached
    assert response.member_id == ""


def test_the_max_size_counts_parked_joins_while_rebalancing() -> None:
    h = Harness(CoordinatorConfig(max_size=2))
    (a, b), _ = h.form_group("g", 2)
    h.join("g", a)  # rebalance: a is parked, b has not rejoined yet
    newcomer = h.reply(h.join("g", version=3))  # a second parked join fits
    assert newcomer is None
    late = h.reply(h.join("g", b))  # b rejoins last and is shed
    assert late.error_code is ErrorCode.group_max_size_reached
    assert b not in {m.member_id for m in h.shard.group("g").members}  # type: ignore[union-attr]


def test_members_already_parked_can_rejoin_at_max_size() -> None:
    h = Harness(CoordinatorConfig(max_size=2))
    (a, b), gen = h.form_group("g", 2)
    first = h.join("g", a)
    again = h.join("g", a)  # a retries its JoinGroup
    assert h.reply(first).error_code is ErrorCode.rebalance_in_progress
    assert h.reply(first).member_id == a
    assert h.reply(again) is None
    h.join("g", b)
    assert h.reply(again).generation_id == gen + 1
