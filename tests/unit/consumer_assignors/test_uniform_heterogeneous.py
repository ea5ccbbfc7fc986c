"""The uniform assignor on groups whose members subscribe to different topics."""

from __future__ import annotations

import uuid

import pytest

from kgroups.coordinator.consumer_assignors import AssignorError, GroupSpec, UniformAssignor

from .groups import T1, T2, T3, assert_valid, member, plain, rejoined, sizes, topics

uniform = UniformAssignor()


def test_members_without_subscriptions_get_nothing() -> None:
    members = [member("a", []), member("b", [T1])]
    result = uniform.assign(GroupSpec(members), topics(T1=2))
    assert plain(result) == {"a": {}, "b": {T1: {0, 1}}}


def test_a_subscription_to_a_topic_missing_from_the_metadata_is_an_error() -> None:
    with pytest.raises(AssignorError):
        uniform.assign(GroupSpec([member("a", [T1]), member("b", [T3])]), topics(T1=3))


def test_first_assignment_gives_each_topic_to_its_subscribers() -> None:
    members = [member("a", [T1]), member("b", [T1, T2]), member("c", [T2, T3])]
    metadata = topics(T1=3, T2=3, T3=2)
    result = uniform.assign(GroupSpec(members), metadata)
    assert_valid(result, members, metadata)
    assert sorted(sizes(result).values()) == [2, 3, 3]


def test_more_members_than_partitions() -> None:
    members = [member("a", [T1]), member("b", [T1, T2]), member("c", [T2]), member("d", [T2])]
    metadata = topics(T1=1, T2=2)
    result = uniform.assign(GroupSpec(members), metadata)
    assert_valid(result, members, metadata)
    assert max(sizes(result).values()) == 1


def test_an_unbalanced_current_assignment_is_balanced() -> None:
    members = [
        member("a", [T1, T2, T3], {T1: [0, 1, 2], T2: [0, 1, 2], T3: [0, 1]}),
        member("b", [T1, T2]),
    ]
    metadata = topics(T1=3, T2=3, T3=2)
    result = uniform.assign(GroupSpec(members), metadata)
    assert_valid(result, members, metadata)
    assert sizes(result) == {"a": 4, "b": 4}
    assert set(result["a"][T3]) == {0, 1}  # only a subscribes to T3


def test_added_partitions_are_given_out_without_moving_the_others() -> None:
    subscriptions = {"a": [T1, T2], "b": [T2]}
    first = uniform.assign(GroupSpec(rejoined({}, subscriptions)), topics(T1=2, T2=2))
    members = rejoined(first, subscriptions)
    metadata = topics(T1=3, T2=5)
    second = uniform.assign(GroupSpec(members), metadata)
    assert_valid(second, members, metadata)
    assert sorted(sizes(second).values()) == [4, 4]
    for member_id, before in first.items():
        for topic_id, partitions in before.items():
            assert partitions <= second[member_id][topic_id]


def test_a_member_leaving_leaves_the_others_their_partitions() -> None:
    subscriptions = {"a": [T1, T2], "b": [T1, T2, T3], "c": [T2, T3]}
    metadata = topics(T1=3, T2=3, T3=3)
    first = uniform.assign(GroupSpec(rejoined({}, subscriptions)), metadata)
    members = rejoined(first, {"a": [T1, T2], "c": [T2, T3]})
    second = uniform.assign(GroupSpec(members), metadata)
    assert_valid(second, members, metadata)
    assert sorted(sizes(second).values()) == [4, 5]
    for member_id in "ac":
        for topic_id, partitions in first[member_id].items():
            assert partitions <= second[member_id][topic_id]


def test_a_member_joining_takes_only_what_balance_requires() -> None:
    subscriptions = {"a": [T1, T2], "b": [T1, T2]}
    metadata = topics(T1=4, T2=4)
    first = uniform.assign(GroupSpec(rejoined({}, subscriptions)), metadata)
    members = rejoined(first, {**subscriptions, "c": [T2]})
    second = uniform.assign(GroupSpec(members), metadata)
    assert_valid(second, members, metadata)
    assert sorted(sizes(second).values()) == [2, 3, 3]
    kept = sum(len(set(second[m].get(t, ())) & set(p)) for m in "ab" for t, p in first[m].items())
    # a holds T1, b holds T2: c takes two of b's, then b one of a's. No
    # balanced assignment moves fewer than these three.
    assert first["a"] == {T1: frozenset(range(4))}
    assert kept == 5


def test_an_unsubscribed_topic_is_taken_away() -> None:
    subscriptions = {"a": [T1, T2], "b": [T1, T2]}
    metadata = topics(T1=2, T2=2)
    first = uniform.assign(GroupSpec(rejoined({}, subscriptions)), metadata)
    members = rejoined(first, {"a": [T1], "b": [T1, T2]})
    second = uniform.assign(GroupSpec(members), metadata)
    assert_valid(second, members, metadata)
    assert T2 not in second["a"]
    assert sizes(second) == {"a": 2, "b": 2}


def test_members_left_without_partitions_when_topics_run_out() -> None:
    subscriptions = {"a": [T1], "b": [T1, T2], "c": [T2]}
    metadata = topics(T1=2, T2=2)
    first = uniform.assign(GroupSpec(rejoined({}, subscriptions)), metadata)
    # T2 is deleted: c subscribes to nothing that exists any more.
    members = rejoined(first, {"a": [T1], "b": [T1], "c": []})
    second = uniform.assign(GroupSpec(members), topics(T1=2))
    assert_valid(second, members, topics(T1=2))
    assert sizes(second) == {"a": 1, "b": 1, "c": 0}


def test_overlapping_subscriptions_end_up_nearly_balanced() -> None:
    # a and b read T1, b and c read T2: a chain; nobody may differ from a
    # member it shares a topic with by more than one.
    members = [member("a", [T1]), member("b", [T1, T2]), member("c", [T2])]
    metadata = topics(T1=10, T2=20)
    result = uniform.assign(GroupSpec(members), metadata)
    assert_valid(result, members, metadata)
    counts = sizes(result)
    assert abs(counts["a"] - counts["b"]) <= 1 or not result["b"].get(T1)
    assert abs(counts["b"] - counts["c"]) <= 1 or not result["c"].get(T2)


def test_topic_ids_are_compared_by_value_not_identity() -> None:
    copy = uuid.UUID(str(T1))
    members = [member("a", [copy], {copy: [1]}), member("b", [T1, T2], {uuid.UUID(str(T1)): [0]})]
    result = plain(uniform.assign(GroupSpec(members), topics(T1=2, T2=1)))
    assert result == {"a": {T1: {1}}, "b": {T1: {0}, T2: {0}}}
