"""When the shell cannot store a batch: answers, error mapping, rollback."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kgroups.coordinator import GroupState

from .harness import Harness


def completing(h: Harness) -> tuple[str, str]:
    joins = [h.join_new("g") for _ in range(2)]
    h.advance(6000)
    (a, _), (b, _) = joins
    return a, b


@pytest.mark.parametrize(
    ("storage_error", "client_error"),
    [
        (ErrorCode.not_enough_replicas, ErrorCode.coordinator_not_available),
        (ErrorCode.not_enough_replicas_after_append, ErrorCode.coordinator_not_available),
        (ErrorCode.unknown_topic_or_partition, ErrorCode.coordinator_not_available),
        (ErrorCode.not_leader_or_follower, ErrorCode.not_coordinator),
        (ErrorCode.kafka_storage_error, ErrorCode.not_coordinator),
        (ErrorCode.request_timed_out, ErrorCode.rebalance_in_progress),
        (ErrorCode.message_too_large, ErrorCode.unknown_server_error),
        (ErrorCode.corrupt_message, ErrorCode.unknown_server_error),
    ],
)
def test_a_lost_assignment_fails_every_waiting_member_and_rebalances(
    storage_error: ErrorCode, client_error: ErrorCode
) -> None:
    h = Harness()
    a, b = completing(h)
    follower = h.sync("g", b, 1)
    records = len(h.log)
    h.fail_next_append = storage_error
    leader = h.sync("g", a, 1, {a: b"A", b: b"B"})
    assert h.reply(leader).error_code is client_error
    assert h.reply(follower).error_code is client_error
    assert h.reply(follower).assignment == b""
    assert len(h.log) == records
    group = h.shard.group("g")
    assert group is not None
    assert group.state is GroupState.PREPARING_REBALANCE
    assert all(m.assignment == b"" for m in group.members)
    # Both rejoin and the group carries on.
    ta, tb = h.join("g", a), h.join("g", b)
    assert h.reply(ta).generation_id == h.reply(tb).generation_id == 2


def test_members_waiting_only_after_the_failure_are_not_affected() -> None:
    h = Harness()
    a, b = completing(h)
    h.fail_next_append = ErrorCode.not_enough_replicas
    h.sync("g", a, 1, {a: b"A", b: b"B"})
    late = h.sync("g", b, 1)
    assert h.reply(late).error_code is ErrorCode.rebalance_in_progress


@pytest.mark.parametrize(
    ("storage_error", "client_error"),
    [
        (ErrorCode.not_enough_replicas, ErrorCode.coordinator_not_available),
        (ErrorCode.not_leader_or_follower, ErrorCode.not_coordinator),
        (ErrorCode.message_too_large, ErrorCode.invalid_commit_offset_size),
        (ErrorCode.record_list_too_large, ErrorCode.invalid_commit_offset_size),
        (ErrorCode.request_timed_out, ErrorCode.request_timed_out),
        (ErrorCode.corrupt_message, ErrorCode.unknown_server_error),
    ],
)
def test_a_lost_commit_is_rolled_back_and_reported(
    storage_error: ErrorCode, client_error: ErrorCode
) -> None:
    h = Harness()
    h.commit("g", {("t", 0): 1})
    h.fail_next_append = storage_error
    errors = h.commit("g", {("t", 0): 2, ("t", 1): 2, ("nope", 0): 2})
    assert errors == {
        ("t", 0): client_error,
        ("t", 1): client_error,
        ("nope", 0): ErrorCode.unknown_topic_or_partition,
    }
    assert h.fetch("g") == {("t", 0): (1, -1, "")}


def test_a_group_created_by_a_lost_commit_is_forgotten() -> None:
    h = Harness()
    h.fail_next_append = ErrorCode.not_enough_replicas
    h.commit("g", {("t", 0): 1})
    assert h.shard.group("g") is None


def test_a_later_commit_survives_an_earlier_lost_one() -> None:
    h = Harness()
    h.commit("g", {("t", 0): 1})
    first = h.shard.offset_commit(*commit_request(h, 2))
    second = h.shard.offset_commit(*commit_request(h, 3))
    h.handle(second)
    h.handle(h.shard.append_failed(first.append_token, ErrorCode.not_enough_replicas, h.now))
    assert h.fetch("g") == {("t", 0): (3, -1, "")}


def commit_request(h: Harness, offset: int) -> tuple[object, object, int]:
    from kio.schema.offset_commit.v9.request import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )
    from kio.static.primitive import i32, i64

    request = OffsetCommitRequest(
        group_id="g",  # type: ignore[arg-type]
        member_id="",
        topics=(
            OffsetCommitRequestTopic(
                name="t",  # type: ignore[arg-type]
                partitions=(
                    OffsetCommitRequestPartition(
                        partition_index=i32(0), committed_offset=i64(offset), committed_metadata=""
                    ),
                ),
            ),
        ),
    )
    return request, h.ctx(h.token("commit"), 9), h.now


def test_a_lost_static_member_replacement_restores_the_old_member_id() -> None:
    h = Harness()
    tokens = [h.join("g", instance=i) for i in ("i1", "i2")]
    h.advance(6000)
    old = h.reply(tokens[1]).member_id
    leader = h.reply(tokens[0]).member_id
    h.sync("g", leader, 1, {leader: b"A", old: b"B"}, instance="i1")
    h.sync("g", old, 1, instance="i2")
    h.fail_next_append = ErrorCode.not_enough_replicas
    response = h.reply(h.join("g", instance="i2"))
    assert response.error_code is ErrorCode.coordinator_not_available
    assert response.member_id == ""
    assert (response.generation_id, response.leader) == (1, leader)
    group = h.shard.group("g")
    assert group is not None and group.state is GroupState.STABLE
    assert [m.member_id for m in group.members] == [leader, old]
    assert h.heartbeat("g", old, 1, instance="i2") is ErrorCode.none


def test_a_lost_group_deletion_brings_the_group_back() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1)
    h.commit("g", {("t", 0): 5}, member_id=a, generation=gen)
    h.leave("g", (a, None))
    h.commit("simple", {("t", 1): 6})
    h.fail_next_append = ErrorCode.not_leader_or_follower
    errors = h.delete_groups("g", "simple", "missing")
    assert errors == {
        "g": ErrorCode.not_coordinator,
        "simple": ErrorCode.not_coordinator,
        "missing": ErrorCode.group_id_not_found,
    }
    group = h.shard.group("g")
    assert group is not None
    assert (group.state, group.generation_id) == (GroupState.EMPTY, gen + 1)
    assert h.fetch("g") == {("t", 0): (5, -1, "")}
    assert h.fetch("simple") == {("t", 1): (6, -1, "")}


def test_a_lost_offset_deletion_brings_the_offsets_back() -> None:
    h = Harness()
    h.commit("g", {("t", 0): 5, ("t", 1): 6})
    h.fail_next_append = ErrorCode.not_enough_replicas
    response = h.delete_offsets("g", {"t": [0, 1]})
    assert response.error_code is ErrorCode.coordinator_not_available
    assert h.fetch("g") == {("t", 0): (5, -1, ""), ("t", 1): (6, -1, "")}


def test_a_lost_empty_group_record_changes_nothing_visible() -> None:
    h = Harness()
    (a,), _ = h.form_group("g", 1)
    h.fail_next_append = ErrorCode.not_enough_replicas
    response = h.leave("g", (a, None))
    assert response.members[0].error_code is ErrorCode.none
    group = h.shard.group("g")
    assert group is not None and group.state is GroupState.EMPTY


def test_a_result_without_records_has_no_token() -> None:
    h = Harness()
    h.heartbeat("g", "m", 1)
    assert h.results[-1].append_token is None
    assert h.shard.append_failed(None, ErrorCode.not_enough_replicas, h.now).replies == []
