"""The uniform assignor on groups whose members subscribe to the same topics."""

from __future__ import annotations

import uuid

import pytest

from kgroups.coordinator.consumer_assignors import (
    AssignorError,
    GroupSpec,
    UniformAssignor,
)

from .groups import T1, T2, T3, T_HIGH, assert_valid, member, plain, rejoined, sizes, topics

uniform = UniformAssignor()


def test_one_member_without_subscriptions_gets_nothing() -> None:
    result = uniform.assign(GroupSpec([member("a", [])]), topics(T1=3))
    assert plain(result) == {"a": {}}


def test_a_subscription_to_a_topic_missing_from_the_metadata_is_an_error() -> None:
    with pytest.raises(AssignorError):
        uniform.assign(GroupSpec([member("a", [T2])]), topics(T1=3))


def test_one_member_gets_every_partition_of_its_topics() -> None:
    result = uniform.assign(GroupSpec([member("a", [T1, T3])]), topics(T1=3, T2=2, T3=2))
    assert plain(result) == {"a": {T1: {0, 1, 2}, T3: {0, 1}}}


def test_first_assignment_of_two_members_is_balanced() -> None:
    members = [member("a", [T1, T3]), member("b", [T1, T3])]
    metadata = topics(T1=3, T3=2)
    result = uniform.assign(GroupSpec(members), metadata)
    assert_valid(result, members, metadata)
    assert sorted(sizes(result).values()) == [2, 3]


def test_more_members_than_partitions_leaves_some_members_empty() -> None:
    members = [member(m, [T1]) for m in "abcd"]
    metadata = topics(T1=2)
    result = uniform.assign(GroupSpec(members), metadata)
    assert_valid(result, members, metadata)
    assert sorted(sizes(result).values()) == [0, 0, 1, 1]


def test_an_unbalanced_current_assignment_is_balanced_moving_as_little_as_possible() -> None:
    members = [
        member("a", [T1, T2], {T1: [0, 1, 2], T2: [0, 1, 2]}),
        member("b", [T1, T2], {T1: [3], T2: []}),
    ]
    metadata = topics(T1=4, T2=4)
    result = plain(uniform.assign(GroupSpec(members), metadata))
    assert sizes_of(result) == {"a": 4, "b": 4}
    # a keeps its lowest four (topic order, then partition), b keeps T1-3.
    assert result["a"] == {T1: {0, 1, 2}, T2: {0}}
    assert result["b"] == {T1: {3}, T2: {1, 2, 3}}


def sizes_of(result: dict[str, dict[object, set[int]]]) -> dict[str, int]:
    return {m: sum(map(len, a.values())) for m, a in result.items()}


def test_added_partitions_go_to_the_members_and_nothing_moves() -> None:
    subscriptions = {"a": [T1, T2], "b": [T1, T2]}
    first = uniform.assign(GroupSpec(rejoined({}, subscriptions)), topics(T1=3, T2=3))
    members = rejoined(first, subscriptions)
    metadata = topics(T1=4, T2=5)
    second = uniform.assign(GroupSpec(members), metadata)
    assert_valid(second, members, metadata)
    assert sorted(sizes(second).values()) == [4, 5]
    for member_id, before in plain(first).items():
        for topic_id, partitions in before.items():
            assert partitions <= set(second[member_id][topic_id])


def test_a_member_joining_takes_partitions_only_from_the_others_surplus() -> None:
    subscriptions = {"a": [T1, T2], "b": [T1, T2]}
    first = uniform.assign(GroupSpec(rejoined({}, subscriptions)), topics(T1=3, T2=3))
    members = rejoined(first, {**subscriptions, "c": [T1, T2]})
    second = uniform.assign(GroupSpec(members), topics(T1=3, T2=3))
    assert_valid(second, members, topics(T1=3, T2=3))
    assert sizes(second) == {"a": 2, "b": 2, "c": 2}
    for member_id in "ab":
        for topic_id, partitions in second[member_id].items():
            assert partitions <= first[member_id][topic_id]


def test_a_member_leaving_leaves_the_others_their_partitions() -> None:
    subscriptions = {"a": [T1, T2], "b": [T1, T2], "c": [T1, T2]}
    first = uniform.assign(GroupSpec(rejoined({}, subscriptions)), topics(T1=3, T2=3))
    members = rejoined(first, {"a": [T1, T2], "c": [T1, T2]})
    second = uniform.assign(GroupSpec(members), topics(T1=3, T2=3))
    assert_valid(second, members, topics(T1=3, T2=3))
    assert sizes(second) == {"a": 3, "c": 3}
    for member_id in "ac":
        for topic_id, partitions in first[member_id].items():
            assert partitions <= second[member_id][topic_id]


def test_an_unsubscribed_topic_is_taken_away_and_the_rest_kept() -> None:
    subscriptions = {"a": [T1, T2], "b": [T1, T2]}
    first = uniform.assign(GroupSpec(rejoined({}, subscriptions)), topics(T1=4, T2=4))
    members = rejoined(first, {"a": [T1], "b": [T1]})
    second = uniform.assign(GroupSpec(members), topics(T1=4, T2=4))
    assert_valid(second, members, topics(T1=4, T2=4))
    assert all(T2 not in a for a in second.values())
    assert sizes(second) == {"a": 2, "b": 2}
    # a held all of T1 (b all of T2): only the two b needs move.
    assert first["a"] == {T1: frozenset({0, 1, 2, 3})}
    assert second["a"][T1] < first["a"][T1]


def test_partitions_of_a_deleted_topic_disappear() -> None:
    subscriptions = {"a": [T1, T2], "b": [T1, T2]}
    first = uniform.assign(GroupSpec(rejoined({}, subscriptions)), topics(T1=2, T2=2))
    # Deleted: gone from the metadata and from the subscriptions resolved to ids.
    members = rejoined(first, {"a": [T1], "b": [T1]})
    second = uniform.assign(GroupSpec(members), topics(T1=2))
    assert_valid(second, members, topics(T1=2))
    assert sizes(second) == {"a": 1, "b": 1}


def test_partitions_beyond_the_partition_count_disappear() -> None:
    members = [member("a", [T1], {T1: [0, 1, 2, 3]}), member("b", [T1], {T1: [4, 5]})]
    result = uniform.assign(GroupSpec(members), topics(T1=3))
    assert_valid(result, members, topics(T1=3))
    assert set(result["a"][T1]) | set(result["b"].get(T1, ())) == {0, 1, 2}
    assert set(result["a"][T1]) >= {0, 1}


def test_a_partition_claimed_twice_stays_with_the_first_member_in_id_order() -> None:
    members = [member("b", [T1], {T1: [0, 1]}), member("a", [T1], {T1: [1]})]
    result = uniform.assign(GroupSpec(members), topics(T1=2))
    assert plain(result) == {"a": {T1: {1}}, "b": {T1: {0}}}


def test_unchanged_members_get_their_current_assignment_back_as_is() -> None:
    subscriptions = {m: [T1, T2] for m in "abc"}
    first = uniform.assign(GroupSpec(rejoined({}, subscriptions)), topics(T1=5, T2=4))
    members = rejoined(first, subscriptions)
    second = uniform.assign(GroupSpec(members), topics(T1=5, T2=4))
    for spec in members:
        assert second[spec.member_id] is spec.assignment


def test_new_partitions_are_dealt_in_kafkas_topic_id_order() -> None:
    # Java compares topic ids as signed numbers: T_HIGH (top bit set) first.
    members = [member("a", [T1, T_HIGH]), member("b", [T1, T_HIGH])]
    result = plain(uniform.assign(GroupSpec(members), topics(T1=2, T_HIGH=2)))
    assert result == {"a": {T_HIGH: {0, 1}}, "b": {T1: {0, 1}}}


def test_the_homogeneous_hint_skips_the_subscription_comparison() -> None:
    members = [member("a", [T1]), member("b", [T1])]
    spec = GroupSpec(members, homogeneous=True)
    assert spec.is_homogeneous()
    assert GroupSpec([member("a", [T1]), member("b", [T2])]).is_homogeneous() is False
    assert sorted(sizes(uniform.assign(spec, topics(T1=3))).values()) == [1, 2]


def test_topic_ids_are_compared_by_value_not_identity() -> None:
    # The coordinator may hand out equal topic ids as distinct objects.
    copy = uuid.UUID(str(T1))
    assert copy == T1 and copy is not T1
    members = [member("a", [copy], {copy: [1]}), member("b", [T1], {T1: [0]})]
    result = plain(uniform.assign(GroupSpec(members), topics(T1=2)))
    assert result == {"a": {T1: {1}}, "b": {T1: {0}}}
