"""OffsetCommit fencing, OffsetFetch, OffsetDelete and DeleteGroups."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

from kgroups.coordinator import CoordinatorConfig, GroupState
from kgroups.coordinator.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_offset_commit_value,
)
from kgroups.protocol.types import GroupId, TopicName, i32, i64

from .harness import Harness, subscription

NONE = ErrorCode.none


def keys(h: Harness) -> list[tuple[object, bool]]:
    """The log as (decoded key, is tombstone)."""
    return [(decode_key(k), v is None) for k, v in h.log]


# -- OffsetCommit ----------------------------------------------------------------


def test_a_simple_commit_creates_an_empty_group_and_stores_the_offset() -> None:
    h = Harness()
    assert h.commit("g", {("t", 0): 42}, metadata="meta", leader_epoch=5) == {("t", 0): NONE}
    group = h.shard.group("g")
    assert group is not None and group.state is GroupState.EMPTY
    assert group.generation_id == 0
    key, value = h.log[-1]
    assert decode_key(key) == OffsetCommitKey("g", "t", 0)
    assert value is not None
    assert decode_offset_commit_value(value) == OffsetCommitValue(
        offset=42, metadata="meta", commit_timestamp=h.now, leader_epoch=5
    )
    assert h.fetch("g") == {("t", 0): (42, 5, "meta")}


def test_null_metadata_is_stored_as_empty() -> None:
    h = Harness()
    h.commit("g", {("t", 0): 1}, metadata=None)
    assert h.fetch("g") == {("t", 0): (1, -1, "")}


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (2, ErrorCode.illegal_generation),
        (8, ErrorCode.illegal_generation),
        (9, ErrorCode.group_id_not_found),
    ],
)
@pytest.mark.parametrize("generation", [0, 3])
def test_a_commit_with_a_generation_for_an_unknown_group(
    version: int, expected: ErrorCode, generation: int
) -> None:
    # Kafka 4.x's OffsetMetadataManager: GROUP_ID_NOT_FOUND from v9 (for both
    # protocols), ILLEGAL_GENERATION before, as older clients expect.
    h = Harness()
    assert h.commit("g", {("t", 0): 1}, member_id="m", generation=generation, version=version) == {
        ("t", 0): expected
    }
    assert h.shard.group("g") is None


def test_unknown_topics_and_partitions_are_refused_per_partition() -> None:
    h = Harness()
    errors = h.commit("g", {("t", 0): 1, ("t", 9): 1, ("nope", 0): 1})
    assert errors == {
        ("t", 0): NONE,
        ("t", 9): ErrorCode.unknown_topic_or_partition,
        ("nope", 0): ErrorCode.unknown_topic_or_partition,
    }
    assert h.fetch("g") == {("t", 0): (1, -1, "")}


def test_a_topic_named_twice_is_answered_once_in_request_order() -> None:
    """The answer's layout, whatever its errors: partitions by topic, topics in
    the order they first appear, a partition named twice answered twice."""
    h = Harness(CoordinatorConfig(offset_metadata_max_bytes=4))

    def commit(layout: list[tuple[str, list[tuple[int, str]]]]) -> list[tuple[str, list]]:
        token = h.token("commit")
        req = OffsetCommitRequest(
            group_id=GroupId("g"),
            generation_id_or_member_epoch=i32(-1),
            member_id="",
            group_instance_id=None,
            topics=tuple(
                OffsetCommitRequestTopic(
                    name=TopicName(topic),
                    partitions=tuple(
                        OffsetCommitRequestPartition(
                            partition_index=i32(p),
                            committed_offset=i64(7),
                            committed_leader_epoch=i32(-1),
                            committed_metadata=metadata,
                        )
                        for p, metadata in partitions
                    ),
                )
                for topic, partitions in layout
            ),
        )
        h.handle(h.shard.offset_commit(req, h.ctx(token, 9), h.now))
        response = h.reply(token)
        return [
            (t.name, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in response.topics
        ]

    same = [("u", [(1, "")]), ("t", [(0, ""), (2, "")]), ("u", [(0, ""), (1, "")])]
    expected = [("u", [(1, NONE), (0, NONE), (1, NONE)]), ("t", [(0, NONE), (2, NONE)])]
    assert commit(same) == expected
    assert commit(same) == expected  # the same commit again, the same answer
    mixed = [("u", [(1, "")]), ("t", [(9, ""), (3, "toolong")]), ("u", [(5, ""), (1, "")])]
    too_large = ErrorCode.offset_metadata_too_large
    unknown = ErrorCode.unknown_topic_or_partition
    assert commit(mixed) == [
        ("u", [(1, NONE), (5, unknown), (1, NONE)]),
        ("t", [(9, unknown), (3, too_large)]),
    ]


def test_only_unknown_partitions_need_no_group_at_all() -> None:
    h = Harness()
    errors = h.commit("g", {("nope", 0): 1}, member_id="m", generation=5)
    assert errors == {("nope", 0): ErrorCode.unknown_topic_or_partition}
    assert h.shard.group("g") is None


def test_metadata_longer_than_the_limit_is_refused_per_partition() -> None:
    h = Harness(CoordinatorConfig(offset_metadata_max_bytes=4))
    h.commit("g", {("t", 0): 1}, metadata="abcd")
    errors = h.commit("g", {("t", 0): 2, ("t", 1): 2}, metadata="abcde")
    assert errors == {
        ("t", 0): ErrorCode.offset_metadata_too_large,
        ("t", 1): ErrorCode.offset_metadata_too_large,
    }
    assert h.fetch("g") == {("t", 0): (1, -1, "abcd")}


def test_members_of_the_current_generation_commit_in_stable() -> None:
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    assert h.commit("g", {("t", 0): 5}, member_id=a, generation=gen) == {("t", 0): NONE}
    assert h.commit("g", {("t", 0): 6}, member_id=b, generation=gen - 1) == {
        ("t", 0): ErrorCode.illegal_generation
    }
    assert h.commit("g", {("t", 0): 6}, member_id="stranger", generation=gen) == {
        ("t", 0): ErrorCode.unknown_member_id
    }
    assert h.commit("g", {("t", 0): 6}) == {("t", 0): ErrorCode.unknown_member_id}
    assert h.fetch("g") == {("t", 0): (5, -1, "")}


def test_a_member_id_with_generation_minus_one_is_still_checked() -> None:
    h = Harness()
    (a,), _gen = h.form_group("g", 1)
    assert h.commit("g", {("t", 0): 5}, member_id=a) == {("t", 0): ErrorCode.illegal_generation}


def test_an_empty_group_takes_commits_without_a_generation_only() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1)
    h.leave("g", (a, None))
    assert h.commit("g", {("t", 0): 1}, member_id=a, generation=gen) == {
        ("t", 0): ErrorCode.unknown_member_id
    }
    assert h.commit("g", {("t", 0): 2}) == {("t", 0): NONE}
    assert h.commit("g", {("t", 0): 3}, member_id="anyone") == {("t", 0): NONE}


# -- OffsetFetch -----------------------------------------------------------------


def test_fetch_of_given_partitions_answers_minus_one_for_the_unknown() -> None:
    h = Harness()
    h.commit("g", {("t", 1): 7, ("u", 0): 9})
    assert h.fetch("g", {"t": [0, 1], "zzz": [3]}) == {
        ("t", 0): (-1, -1, ""),
        ("t", 1): (7, -1, ""),
        ("zzz", 3): (-1, -1, ""),
    }
    assert h.fetch("missing", {"t": [0]}) == {("t", 0): (-1, -1, "")}


def test_fetch_of_all_partitions() -> None:
    h = Harness()
    h.commit("g", {("t", 1): 7, ("u", 0): 9, ("t", 0): 3})
    assert h.fetch("g") == {("t", 1): (7, -1, ""), ("t", 0): (3, -1, ""), ("u", 0): (9, -1, "")}
    assert h.fetch("missing") == {}


def test_fetch_groups_partitions_by_topic_in_one_response_group() -> None:
    h = Harness()
    h.commit("g", {("t", 1): 7, ("u", 0): 9, ("t", 0): 3})
    token = h.token("fetch")
    from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup

    request = OffsetFetchRequestGroup(group_id="g", topics=None)  # type: ignore[arg-type]
    h.handle(h.shard.offset_fetch(request, h.ctx(token, 9), h.now, require_stable=True))
    (group,) = h.reply(token).groups
    assert group.group_id == "g" and group.error_code is NONE
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in group.topics] == [
        ("t", [1, 0]),
        ("u", [0]),
    ]


# -- OffsetDelete ----------------------------------------------------------------


def delete_errors(h: Harness, group: str, partitions: dict[str, list[int]]) -> object:
    response = h.delete_offsets(group, partitions)
    if response.error_code is not NONE:
        return response.error_code
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


def test_offset_delete_of_a_missing_group_or_empty_id() -> None:
    h = Harness()
    assert delete_errors(h, "nope", {"t": [0]}) is ErrorCode.group_id_not_found
    assert delete_errors(h, "", {"t": [0]}) is ErrorCode.invalid_group_id


def test_offset_delete_in_an_empty_group_removes_what_is_asked() -> None:
    h = Harness()
    h.commit("g", {("t", 0): 1, ("t", 1): 2})
    assert delete_errors(h, "g", {"t": [0, 3]}) == {("t", 0): NONE, ("t", 3): NONE}
    assert h.fetch("g") == {("t", 1): (2, -1, "")}
    assert keys(h)[-1] == (OffsetCommitKey("g", "t", 0), True)


def test_offset_delete_of_the_last_offsets_removes_a_simple_group() -> None:
    h = Harness()
    h.commit("g", {("t", 0): 1})
    delete_errors(h, "g", {"t": [0]})
    assert h.shard.group("g") is None
    assert keys(h)[-1] == (OffsetCommitKey("g", "t", 0), True)  # no group tombstone at gen 0


def test_offset_delete_of_the_last_offsets_of_a_stored_group_writes_its_tombstone() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1)
    h.commit("g", {("t", 0): 1}, member_id=a, generation=gen)
    h.leave("g", (a, None))
    delete_errors(h, "g", {"t": [0]})
    assert h.shard.group("g") is None
    assert keys(h)[-2:] == [(OffsetCommitKey("g", "t", 0), True), (GroupMetadataKey("g"), True)]


def test_offset_delete_refuses_topics_a_consumer_group_subscribes_to() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1, protocols=(("range", subscription("t")),))
    h.commit("g", {("t", 0): 1, ("u", 0): 2}, member_id=a, generation=gen)
    assert delete_errors(h, "g", {"t": [0], "u": [0]}) == {
        ("t", 0): ErrorCode.group_subscribed_to_topic,
        ("u", 0): NONE,
    }
    assert h.fetch("g") == {("t", 0): (1, -1, "")}


def test_offset_delete_treats_an_unreadable_subscription_as_subscribed_to_all() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1, protocols=(("range", b"\x00"),))
    h.commit("g", {("u", 0): 2}, member_id=a, generation=gen)
    assert delete_errors(h, "g", {"u": [0]}) == {("u", 0): ErrorCode.group_subscribed_to_topic}


def test_newer_subscription_versions_are_read_too() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1, protocols=(("range", subscription("t", version=1)),))
    h.commit("g", {("u", 0): 2}, member_id=a, generation=gen)
    assert delete_errors(h, "g", {"u": [0]}) == {("u", 0): NONE}


def test_offset_delete_in_a_non_consumer_group_with_members_is_refused() -> None:
    h = Harness()
    token = h.join("g", protocol_type="connect", version=3)
    h.advance(3000)
    assert h.reply(token).error_code is NONE
    assert delete_errors(h, "g", {"t": [0]}) is ErrorCode.non_empty_group


# -- DeleteGroups ----------------------------------------------------------------


def test_delete_groups_outcomes() -> None:
    h = Harness()
    h.form_group("busy", 1)
    h.commit("simple", {("t", 0): 1})
    errors = h.delete_groups("busy", "simple", "missing", "simple")
    assert errors == {
        "busy": ErrorCode.non_empty_group,
        "simple": NONE,
        "missing": ErrorCode.group_id_not_found,
    }
    assert h.shard.group("simple") is None
    assert h.fetch("simple") == {}


def test_deleting_a_stored_group_tombstones_offsets_then_the_group() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1)
    h.commit("g", {("t", 0): 1, ("u", 1): 2}, member_id=a, generation=gen)
    h.leave("g", (a, None))
    assert h.delete_groups("g") == {"g": NONE}
    assert keys(h)[-3:] == [
        (OffsetCommitKey("g", "t", 0), True),
        (OffsetCommitKey("g", "u", 1), True),
        (GroupMetadataKey("g"), True),
    ]
    assert h.describe("g").group_state == "Dead"


def test_a_group_created_by_a_rejected_join_is_deleted_without_records() -> None:
    h = Harness()
    h.join("g", protocol_type="")  # rejected, but the group now exists, Empty
    records = len(h.log)
    assert h.delete_groups("g") == {"g": NONE}
    assert len(h.log) == records
    assert h.shard.group("g") is None
