"""Static membership (KIP-345): instance ids, replacement, fencing."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.coordinator import GroupState
from kgroups.coordinator.records import decode_group_metadata_value

from .harness import Harness


def static_group(h: Harness, *instances: str, session: int = 10_000) -> tuple[dict[str, str], int]:
    """Static members join and sync; returns ({instance: member id}, generation)."""
    tokens = {i: h.join("g", instance=i, session=session) for i in instances}
    while any(h.reply(t) is None for t in tokens.values()):
        h.advance(1000)
    responses = {i: h.reply(t) for i, t in tokens.items()}
    ids = {i: r.member_id for i, r in responses.items()}
    gen = responses[instances[0]].generation_id
    leader = responses[instances[0]].leader
    leader_instance = next(i for i, m in ids.items() if m == leader)
    h.sync(
        "g", leader, gen, {m: f"a-{i}".encode() for i, m in ids.items()}, instance=leader_instance
    )
    for i, m in ids.items():
        if m != leader:
            h.sync("g", m, gen, instance=i)
    return ids, gen


def state(h: Harness) -> GroupState:
    group = h.shard.group("g")
    assert group is not None
    return group.state


def test_static_members_join_in_one_step_with_ids_named_after_the_instance() -> None:
    h = Harness()
    token = h.join("g", instance="alpha")
    h.advance(3000)
    assert h.reply(token).member_id == "alpha-1"


def test_a_restarted_follower_replaces_its_old_id_without_a_rebalance() -> None:
    h = Harness()
    ids, gen = static_group(h, "i1", "i2")
    old = ids["i2"]
    records = len(h.log)
    response = h.reply(h.join("g", instance="i2"))
    assert response.error_code is ErrorCode.none
    new = response.member_id
    assert new != old
    assert (response.generation_id, response.leader) == (gen, ids["i1"])
    assert response.members == () and response.skip_assignment is False
    assert state(h) is GroupState.STABLE
    # The new id is stored, with the assignment the old id had.
    assert len(h.log) == records + 1
    value = h.log[-1][1]
    assert value is not None
    stored = decode_group_metadata_value(value)
    assert [(m.member_id, m.assignment) for m in stored.members] == [
        (ids["i1"], b"a-i1"),
        (new, b"a-i2"),
    ]
    # The old incarnation is fenced, the new one syncs to its assignment.
    assert h.heartbeat("g", old, gen, instance="i2") is ErrorCode.fenced_instance_id
    assert h.reply(h.sync("g", new, gen, instance="i2")).assignment == b"a-i2"
    assert h.heartbeat("g", new, gen, instance="i2") is ErrorCode.none


def test_a_restarted_leader_on_v9_is_told_to_skip_the_assignment() -> None:
    h = Harness()
    ids, _gen = static_group(h, "i1", "i2")
    response = h.reply(h.join("g", instance="i1"))
    assert response.skip_assignment is True
    assert response.leader == response.member_id
    assert {m.member_id for m in response.members} == {response.member_id, ids["i2"]}
    assert state(h) is GroupState.STABLE


def test_a_restarted_leader_before_v9_is_shown_its_old_id_as_leader() -> None:
    h = Harness()
    ids, _gen = static_group(h, "i1", "i2")
    response = h.reply(h.join("g", instance="i1", version=8))
    assert response.leader == ids["i1"] != response.member_id
    assert response.members == ()
    assert h.shard.group("g").leader_id == response.member_id  # type: ignore[union-attr]


def test_a_restart_with_a_protocol_change_rebalances() -> None:
    h = Harness()
    ids, gen = static_group(h, "i1", "i2")
    both = (("sticky", b""), ("range", b""))
    h.join("g", ids["i2"], instance="i2", protocols=both)  # i2 now prefers sticky too
    h.join("g", ids["i1"], instance="i1")
    h.sync("g", ids["i1"], gen + 1, {}, instance="i1")
    h.sync("g", ids["i2"], gen + 1, instance="i2")
    token = h.join("g", instance="i1", protocols=both)  # the vote would now pick sticky
    assert h.reply(token) is None
    assert state(h) is GroupState.PREPARING_REBALANCE
    h.join("g", ids["i2"], instance="i2", protocols=both)
    assert h.reply(token).protocol_name == "sticky"
    assert h.reply(token).generation_id == gen + 2


def test_a_restart_while_completing_rebalances() -> None:
    h = Harness()
    tokens = [h.join("g", instance=i) for i in ("i1", "i2")]
    h.advance(6000)
    old = h.reply(tokens[1]).member_id
    parked = h.sync("g", old, 1, instance="i2")
    new_join = h.join("g", instance="i2")
    assert h.reply(parked).error_code is ErrorCode.fenced_instance_id
    assert h.reply(new_join) is None
    assert state(h) is GroupState.PREPARING_REBALANCE


def test_a_restart_while_preparing_fences_the_parked_join() -> None:
    h = Harness()
    ids, gen = static_group(h, "i1", "i2")
    parked = h.join("g", ids["i2"], instance="i2", protocols=(("range", b"new"),))
    assert h.reply(parked) is None  # a rebalance, waiting for i1
    fresh = h.join("g", instance="i2")
    assert h.reply(parked).error_code is ErrorCode.fenced_instance_id
    assert h.reply(fresh) is None  # takes the old id's place in the rebalance
    h.join("g", ids["i1"], instance="i1")
    response = h.reply(fresh)
    assert response.error_code is ErrorCode.none
    assert response.generation_id == gen + 1
    assert response.member_id not in ids.values()


def test_stale_member_ids_are_fenced_everywhere() -> None:
    h = Harness()
    ids, gen = static_group(h, "i1", "i2")
    new = h.reply(h.join("g", instance="i2")).member_id
    old = ids["i2"]
    assert h.reply(h.sync("g", old, gen, instance="i2")).error_code is (
        ErrorCode.fenced_instance_id
    )
    assert h.reply(h.join("g", old, instance="i2")).error_code is ErrorCode.fenced_instance_id
    assert h.commit("g", {("t", 0): 1}, member_id=old, generation=gen, instance="i2") == {
        ("t", 0): ErrorCode.fenced_instance_id
    }
    leave = h.leave("g", (old, "i2"))
    assert leave.members[0].error_code is ErrorCode.fenced_instance_id
    assert h.heartbeat("g", new, gen, instance="i2") is ErrorCode.none


def test_an_unknown_instance_id_is_an_unknown_member() -> None:
    h = Harness()
    ids, gen = static_group(h, "i1")
    assert h.heartbeat("g", ids["i1"], gen, instance="other") is ErrorCode.unknown_member_id
    assert h.reply(h.join("g", ids["i1"], instance="other")).error_code is (
        ErrorCode.unknown_member_id
    )


def test_static_members_are_removed_by_instance_id_alone() -> None:
    h = Harness()
    ids, _ = static_group(h, "i1", "i2")
    response = h.leave("g", ("", "i2"), ("", "unknown"))
    assert [m.error_code for m in response.members] == [
        ErrorCode.none,
        ErrorCode.unknown_member_id,
    ]
    assert [m.member_id for m in h.shard.group("g").members] == [ids["i1"]]  # type: ignore[union-attr]


def test_a_static_follower_that_misses_the_rebalance_stays_a_member() -> None:
    h = Harness()
    ids, gen = static_group(h, "i1", "i2", session=60_000)
    rejoin = h.join("g", ids["i1"], instance="i1", session=60_000)
    h.advance(30_000)  # i2 never rejoins within the rebalance timeout
    response = h.reply(rejoin)
    assert response.generation_id == gen + 1
    assert {m.member_id for m in response.members} == {ids["i1"], ids["i2"]}
    late = h.reply(h.join("g", ids["i2"], instance="i2", session=60_000))
    assert late.generation_id == gen + 1  # unchanged metadata: the same generation


def test_a_dynamic_member_that_misses_the_rebalance_is_removed() -> None:
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    rejoin = h.join("g", a)
    for _ in range(6):
        h.advance(5_000)
        h.heartbeat("g", b, gen)  # alive, but never rejoins
    assert [m.member_id for m in h.reply(rejoin).members] == [a]
    assert h.heartbeat("g", b, gen) is ErrorCode.unknown_member_id


def test_a_static_leader_that_misses_the_rebalance_loses_the_leadership() -> None:
    h = Harness()
    ids, gen = static_group(h, "i1", "i2", session=60_000)
    assert h.shard.group("g").leader_id == ids["i1"]  # type: ignore[union-attr]
    parked = h.join("g", ids["i2"], instance="i2", protocols=(("range", b"x"),), session=60_000)
    h.advance(30_000)  # the leader never rejoins
    response = h.reply(parked)
    assert response.generation_id == gen + 1
    assert response.leader == ids["i2"]
    assert {m.member_id for m in response.members} == {ids["i1"], ids["i2"]}


def test_when_no_static_member_rejoins_the_phase_waits_another_round() -> None:
    h = Harness()
    ids, gen = static_group(h, "i1", "i2", session=60_000)
    h.leave("g", ("", "i1"))  # a rebalance that only i2 could complete
    h.advance(30_000)
    group = h.shard.group("g")
    assert group is not None and group.state is GroupState.PREPARING_REBALANCE
    assert h.shard.next_deadline_ms() == h.now + 30_000
    response = h.reply(h.join("g", ids["i2"], instance="i2", session=60_000))
    assert response.generation_id == gen + 1


def test_static_members_expire_with_their_session() -> None:
    h = Harness()
    ids, gen = static_group(h, "i1", "i2")
    for _ in range(3):
        h.advance(5_000)
        h.heartbeat("g", ids["i1"], gen, instance="i1")
    assert [m.member_id for m in h.shard.group("g").members] == [ids["i1"]]  # type: ignore[union-attr]
