"""DescribeGroups, ListGroups, the read-only views, and answers while loading."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.coordinator import GroupState

from .harness import Harness


def test_an_unknown_group_is_described_as_dead() -> None:
    h = Harness()
    described = h.describe("nope")
    assert described.error_code is ErrorCode.none
    assert (described.group_state, described.protocol_type, described.protocol_data) == (
        "Dead",
        "",
        "",
    )
    assert described.members == ()


def test_a_stable_group_is_described_with_metadata_and_assignments() -> None:
    h = Harness()
    (a, b), _ = h.form_group("g", 2, protocols=(("range", b"sub"),))
    described = h.describe("g")
    assert (described.group_state, described.protocol_type, described.protocol_data) == (
        "Stable",
        "consumer",
        "range",
    )
    assert [
        (m.member_id, m.client_id, m.client_host, m.member_metadata, m.member_assignment)
        for m in described.members
    ] == [
        (a, "client", "/10.0.0.1", b"sub", b"assignment-" + a.encode()),
        (b, "client", "/10.0.0.1", b"sub", b"assignment-" + b.encode()),
    ]


def test_a_rebalancing_group_is_described_without_metadata() -> None:
    h = Harness()
    (a, _b), _ = h.form_group("g", 2)
    h.join("g", a)
    described = h.describe("g")
    assert (described.group_state, described.protocol_data) == ("PreparingRebalance", "")
    assert [(m.member_metadata, m.member_assignment) for m in described.members] == [
        (b"", b""),
        (b"", b""),
    ]


def test_static_members_are_described_with_their_instance_id() -> None:
    h = Harness()
    token = h.join("g", instance="i1")
    h.advance(3000)
    assert h.describe("g").members[0].group_instance_id == "i1"
    assert h.reply(token).error_code is ErrorCode.none


def groups_listed(h: Harness, states: tuple[str, ...] = (), types: tuple[str, ...] = ()) -> set:
    response = h.list_groups(states, types)
    assert response.error_code is ErrorCode.none
    return {(g.group_id, g.group_state, g.protocol_type, g.group_type) for g in response.groups}


def test_list_groups_and_its_filters() -> None:
    h = Harness()
    h.form_group("stable", 1)
    h.commit("simple", {("t", 0): 1})
    (a,), _ = h.form_group("busy", 1)
    h.join("busy", a)  # one member, rejoining: completes at once
    assert groups_listed(h) == {
        ("stable", "Stable", "consumer", "classic"),
        ("simple", "Empty", "", "classic"),
        ("busy", "CompletingRebalance", "consumer", "classic"),
    }
    assert groups_listed(h, states=("stable", "EMPTY")) == {
        ("stable", "Stable", "consumer", "classic"),
        ("simple", "Empty", "", "classic"),
    }
    assert groups_listed(h, types=("Classic",)) == groups_listed(h)
    assert groups_listed(h, types=("consumer",)) == set()


def test_the_group_views_are_snapshots() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1)
    h.commit("g", {("t", 0): 4}, member_id=a, generation=gen)
    (view,) = h.shard.groups()
    assert (view.group_id, view.state, view.generation_id, view.leader_id) == (
        "g",
        GroupState.STABLE,
        gen,
        a,
    )
    assert view.members[0].protocols == ("range",)
    assert view.offsets[("t", 0)].offset == 4  # type: ignore[index]
    h.leave("g", (a, None))
    assert view.state is GroupState.STABLE


def test_requests_while_loading_get_kafkas_loading_answers() -> None:
    h = Harness()
    h.shard.replay(*_some_record())
    assert h.shard.loading
    assert h.reply(h.join("g")).error_code is ErrorCode.coordinator_load_in_progress
    assert h.reply(h.sync("g", "m", 1)).error_code is ErrorCode.rebalance_in_progress
    assert h.heartbeat("g", "m", 1) is ErrorCode.none
    assert h.leave("g", ("m", None)).error_code is ErrorCode.coordinator_load_in_progress
    assert h.commit("g", {("t", 0): 1}) == {("t", 0): ErrorCode.coordinator_load_in_progress}
    assert h.delete_groups("g") == {"g": ErrorCode.coordinator_load_in_progress}
    assert h.describe("g").error_code is ErrorCode.coordinator_load_in_progress
    assert h.list_groups().error_code is ErrorCode.coordinator_load_in_progress
    assert h.delete_offsets("g", {"t": [0]}).error_code is ErrorCode.coordinator_load_in_progress
    h.handle(h.shard.finish_load(h.now))
    assert not h.shard.loading
    assert h.reply(h.join("g")).error_code is ErrorCode.member_id_required


def _some_record() -> tuple[bytes, bytes | None]:
    from kgroups.coordinator.records import encode_offset_commit_key

    return encode_offset_commit_key("other", "t", 0), None


def test_unloading_answers_parked_requests_with_not_coordinator() -> None:
    h = Harness()
    (a, _b), _ = h.form_group("g", 2)
    parked_join = h.join("g", a)
    h.join_new("other")
    joins = [h.join_new("h") for _ in range(2)]
    h.advance(6_000)
    parked_sync = h.sync("h", joins[1][0], 1)
    h.handle(h.shard.unload(h.now))
    assert h.reply(parked_join).error_code is ErrorCode.not_coordinator
    assert h.reply(parked_sync).error_code is ErrorCode.not_coordinator
    assert h.shard.next_deadline_ms() is None
