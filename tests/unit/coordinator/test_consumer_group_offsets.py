"""OffsetCommit and OffsetFetch against a consumer group: member epochs
instead of generations."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer.offsets import offset_commit_error, offset_fetch_error

from .consumer_group_harness import Harness


def test_commits_need_the_current_member_epoch_and_version_9() -> None:
    h = Harness()
    h.join("a")
    assert offset_commit_error(h.group, "a", 1, False, 9) is ErrorCode.none
    assert offset_commit_error(h.group, "a", 0, False, 9) is ErrorCode.stale_member_epoch
    assert offset_commit_error(h.group, "a", 1, False, 8) is ErrorCode.unsupported_version
    assert offset_commit_error(h.group, "a", 1, True, 3) is ErrorCode.none
    assert offset_commit_error(h.group, "x", 1, False, 9) is ErrorCode.unknown_member_id
    # Without a member, only into an empty group.
    assert offset_commit_error(h.group, "", -1, False, 9) is ErrorCode.unknown_member_id
    h.heartbeat("a", -1)
    assert offset_commit_error(h.group, "", -1, False, 2) is ErrorCode.none


def test_fetches_by_a_member_need_its_epoch() -> None:
    h = Harness()
    h.join("a")
    assert offset_fetch_error(h.group, None, -1) is ErrorCode.none
    assert offset_fetch_error(h.group, "a", 1) is ErrorCode.none
    assert offset_fetch_error(h.group, "a", 2) is ErrorCode.stale_member_epoch
    assert offset_fetch_error(h.group, "x", 1) is ErrorCode.unknown_member_id


def test_the_describe_shows_the_assignor_the_members_ask_for() -> None:
    h = Harness()
    h.join("a")
    assert h.coordinator.assignor_name(h.group) == "uniform"
    h.join("b", server_assignor="range")
    assert h.coordinator.assignor_name(h.group) == "range"
