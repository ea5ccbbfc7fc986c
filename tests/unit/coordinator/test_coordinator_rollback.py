"""Rollback by snapshot: a batch that fails to append takes back what it
changed, and so do the calls still in flight that built on it."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.static.primitive import i32, i64

from kgroups.coordinator import GroupState, Result

from .harness import SESSION_MS, Harness, Token, commit_errors

LOST = ErrorCode.not_enough_replicas
# What a client is told for LOST (the coordinator is not available for now).
TOLD = ErrorCode.coordinator_not_available


def commit_in_flight(
    h: Harness,
    group: str,
    offsets: dict[tuple[str, int], int],
    *,
    member_id: str = "",
    generation: int = -1,
) -> tuple[Result, Token]:
    """An OffsetCommit whose records are appended but not yet durable."""
    token = h.token("commit")
    req = OffsetCommitRequest(
        group_id=group,  # type: ignore[arg-type]
        generation_id_or_member_epoch=i32(generation),
        member_id=member_id,
        topics=tuple(
            OffsetCommitRequestTopic(
                name=topic,  # type: ignore[arg-type]
                partitions=(
                    OffsetCommitRequestPartition(
                        partition_index=i32(partition),
                        committed_offset=i64(offset),
                        committed_metadata="",
                    ),
                ),
            )
            for (topic, partition), offset in offsets.items()
        ),
    )
    return h.shard.offset_commit(req, h.ctx(token, 9), h.now), token


def fail(h: Harness, result: Result, error: ErrorCode = LOST) -> None:
    h.handle(h.shard.append_failed(result.append_token, error, h.now))


def test_a_commit_built_on_a_lost_one_of_the_same_group_is_taken_back_too() -> None:
    h = Harness()
    h.commit("g", {("t", 0): 1, ("t", 1): 1})
    first, first_token = commit_in_flight(h, "g", {("t", 0): 2})
    second, second_token = commit_in_flight(h, "g", {("t", 1): 3})
    elsewhere, elsewhere_token = commit_in_flight(h, "other", {("t", 0): 4})
    fail(h, first)
    assert commit_errors(h.reply(first_token)) == {("t", 0): TOLD}
    assert commit_errors(h.reply(second_token)) == {("t", 1): TOLD}
    assert h.fetch("g") == {("t", 0): (1, -1, ""), ("t", 1): (1, -1, "")}
    # Another group's commit did not build on the lost one: it waits for its own append.
    assert h.reply(elsewhere_token) is None
    h.handle(elsewhere)
    assert commit_errors(h.reply(elsewhere_token)) == {("t", 0): ErrorCode.none}
    assert h.fetch("other") == {("t", 0): (4, -1, "")}
    # The second batch's own fsync fails later: nothing more is taken back.
    fail(h, second, ErrorCode.kafka_storage_error)
    assert h.fetch("g") == {("t", 0): (1, -1, ""), ("t", 1): (1, -1, "")}


def test_a_lost_commit_leaves_the_offsets_exactly_as_they_were() -> None:
    h = Harness()
    h.commit("g", {("t", 0): 5, ("t", 1): 6}, metadata="kept", leader_epoch=3)
    h.commit("g", {("u", 0): 7}, version=2, retention_ms=60_000)
    view = h.shard.group("g")
    assert view is not None
    before = dict(view.offsets)
    h.advance(1_000)
    h.fail_next_append = LOST
    errors = h.commit("g", {("t", 0): 9, ("t", 2): 9, ("u", 0): 9}, metadata="new", leader_epoch=4)
    assert set(errors.values()) == {TOLD}
    view = h.shard.group("g")
    assert view is not None
    assert dict(view.offsets) == before  # offsets, epochs, metadata, timestamps, expiry


def completing(h: Harness) -> tuple[str, str]:
    """Two members through the join phase, waiting for their assignments."""
    joins = [h.join_new("g") for _ in range(2)]
    h.advance(6000)
    (a, _), (b, _) = joins
    return a, b


def test_answers_built_on_a_lost_assignment_are_taken_back() -> None:
    h = Harness()
    a, b = completing(h)
    h.held = []
    leader = h.sync("g", a, 1, {a: b"A", b: b"B"})
    follower = h.sync("g", b, 1)  # the group is Stable now: answered at once
    assignment, answered_at_once = h.held
    commit, commit_token = commit_in_flight(h, "g", {("t", 0): 1}, member_id=b, generation=1)
    assert answered_at_once.replies and commit.records
    h.held = None
    fail(h, assignment)
    assert h.reply(leader).error_code is TOLD
    assert h.reply(follower).error_code is TOLD
    assert h.reply(follower).assignment == b""
    assert commit_errors(h.reply(commit_token)) == {("t", 0): TOLD}
    assert h.fetch("g") == {}
    group = h.shard.group("g")
    assert group is not None and group.state is GroupState.PREPARING_REBALANCE
    assert all(m.assignment == b"" for m in group.members)
    # Both rejoin and the group carries on.
    ta, tb = h.join("g", a), h.join("g", b)
    assert h.reply(ta).generation_id == h.reply(tb).generation_id == 2


def test_a_join_parked_on_a_lost_assignment_is_answered() -> None:
    h = Harness()
    a, b = completing(h)
    h.held = []
    h.sync("g", a, 1, {a: b"A", b: b"B"})
    newcomer = h.join("g", version=3)  # joins the Stable group: a rebalance, parked
    (assignment, _) = h.held
    h.held = None
    fail(h, assignment)
    assert h.reply(newcomer).error_code is TOLD
    group = h.shard.group("g")
    assert group is not None
    assert sorted(m.member_id for m in group.members) == sorted([a, b])


def test_a_lost_static_member_replacement_restores_the_session_deadlines() -> None:
    h = Harness()
    tokens = [h.join("g", instance=i) for i in ("i1", "i2")]
    h.advance(6000)
    leader = h.reply(tokens[0]).member_id
    old = h.reply(tokens[1]).member_id
    h.sync("g", leader, 1, {leader: b"A", old: b"B"}, instance="i1")
    h.sync("g", old, 1, instance="i2")  # old's session runs from here
    h.advance(SESSION_MS // 2)
    assert h.heartbeat("g", leader, 1, instance="i1") is ErrorCode.none
    h.fail_next_append = LOST
    response = h.reply(h.join("g", instance="i2"))
    assert response.error_code is TOLD
    # The old member id is back with its own deadline: the lost join did not extend it.
    h.advance(SESSION_MS // 2 - 1)
    assert h.heartbeat("g", leader, 1, instance="i1") is ErrorCode.none
    group = h.shard.group("g")
    assert group is not None and [m.member_id for m in group.members] == [leader, old]
    h.advance(2)
    group = h.shard.group("g")
    assert group is not None and [m.member_id for m in group.members] == [leader]
    assert group.state is GroupState.PREPARING_REBALANCE
    assert h.heartbeat("g", old, 1, instance="i2") is ErrorCode.unknown_member_id


def test_a_lost_commit_still_shows_its_member_alive() -> None:
    h = Harness()
    (a,), generation = h.form_group("g", 1)
    h.advance(SESSION_MS // 2)
    h.fail_next_append = LOST
    assert h.commit("g", {("t", 0): 1}, member_id=a, generation=generation) == {("t", 0): TOLD}
    h.advance(SESSION_MS // 2 + 1)  # past the deadline the commit replaced
    assert h.heartbeat("g", a, generation) is ErrorCode.none
