"""The server-side range assignor."""

from __future__ import annotations

import pytest

from kgroups.coordinator.consumer_assignors import AssignorError, GroupSpec, RangeAssignor

from .groups import T1, T2, T3, assert_valid, member, plain, rejoined, topics

range_assignor = RangeAssignor()


def test_one_member_without_topics_gets_nothing() -> None:
    assert plain(range_assignor.assign(GroupSpec([member("a", [])]), topics(T1=2))) == {"a": {}}


def test_a_subscription_to_a_topic_missing_from_the_metadata_is_an_error() -> None:
    with pytest.raises(AssignorError):
        range_assignor.assign(GroupSpec([member("a", [T2])]), topics(T1=2))


def test_same_subscriptions_and_partition_counts_are_co_partitioned() -> None:
    members = [member("m0", [T1, T2]), member("m1", [T1, T2])]
    result = range_assignor.assign(GroupSpec(members), topics(T1=3, T2=3))
    assert plain(result) == {"m0": {T1: {0, 1}, T2: {0, 1}}, "m1": {T1: {2}, T2: {2}}}


def test_different_subscriptions_split_each_topic_among_its_subscribers() -> None:
    members = [member("a", [T1, T2]), member("b", [T3]), member("c", [T2, T3])]
    metadata = topics(T1=3, T2=3, T3=2)
    result = range_assignor.assign(GroupSpec(members), metadata)
    assert_valid(result, members, metadata)
    assert plain(result) == {
        "a": {T1: {0, 1, 2}, T2: {0, 1}},
        "b": {T3: {0}},
        "c": {T2: {2}, T3: {1}},
    }


def test_more_members_than_partitions_leaves_the_last_members_empty() -> None:
    members = [member(m, [T1]) for m in "cab"]
    result = range_assignor.assign(GroupSpec(members), topics(T1=2))
    assert plain(result) == {"a": {T1: {0}}, "b": {T1: {1}}, "c": {}}


def test_a_member_joining_reshapes_the_ranges() -> None:
    subscriptions = {"a": [T1, T2], "b": [T1, T2]}
    first = range_assignor.assign(GroupSpec(rejoined({}, subscriptions)), topics(T1=4, T2=4))
    members = rejoined(first, {**subscriptions, "c": [T1, T2]})
    second = range_assignor.assign(GroupSpec(members), topics(T1=4, T2=4))
    assert plain(second) == {
        "a": {T1: {0, 1}, T2: {0, 1}},
        "b": {T1: {2}, T2: {2}},
        "c": {T1: {3}, T2: {3}},
    }


def test_a_partition_added_goes_to_the_first_member() -> None:
    members = [member("a", [T1, T2]), member("b", [T1, T2])]
    result = range_assignor.assign(GroupSpec(members), topics(T1=5, T2=4))
    assert plain(result) == {"a": {T1: {0, 1, 2}, T2: {0, 1}}, "b": {T1: {3, 4}, T2: {2, 3}}}


def test_static_members_keep_their_ranges_through_a_rolling_restart() -> None:
    before = [
        member("z-1", [T1, T2], instance_id="i0"),
        member("a-2", [T1, T2], instance_id="i1"),
    ]
    after = [
        member("b-3", [T1, T2], instance_id="i0"),
        member("a-4", [T1, T2], instance_id="i1"),
    ]
    metadata = topics(T1=3, T2=3)
    first = plain(range_assignor.assign(GroupSpec(before), metadata))
    second = plain(range_assignor.assign(GroupSpec(after), metadata))
    assert first["z-1"] == second["b-3"] == {T1: {0, 1}, T2: {0, 1}}
    assert first["a-2"] == second["a-4"] == {T1: {2}, T2: {2}}


def test_static_members_come_before_dynamic_ones() -> None:
    members = [
        member("a", [T1]),
        member("b", [T1], instance_id="y"),
        member("c", [T1], instance_id="x"),
    ]
    result = plain(range_assignor.assign(GroupSpec(members), topics(T1=3)))
    assert result == {"c": {T1: {0}}, "b": {T1: {1}}, "a": {T1: {2}}}


def test_unsubscribed_topics_are_dropped() -> None:
    members = [member("a", [T1], {T2: [0]}), member("b", [T1], {T2: [1]})]
    result = plain(range_assignor.assign(GroupSpec(members), topics(T1=2, T2=2)))
    assert result == {"a": {T1: {0}}, "b": {T1: {1}}}
