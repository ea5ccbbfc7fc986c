"""Regular-expression subscriptions of consumer groups, on virtual time."""

from __future__ import annotations

import random
import re
import uuid

import pytest
from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer import ConsumerGroupCoordinator, ConsumerGroupState
from kgroups.coordinator.consumer.records import (
    RegularExpressionKey,
    RegularExpressionValue,
    decode_record,
)

from .consumer_group_harness import BAR, FOO, Harness, partitions, snapshot
from .test_consumer_group_simulation import Client, assert_no_partition_owned_twice

FOO2 = uuid.UUID(int=3)


def regex_records(h: Harness) -> list[tuple[str, RegularExpressionValue | None]]:
    found = []
    for key, value in h.log:
        k, v = decode_record(key, value)
        if isinstance(k, RegularExpressionKey):
            assert v is None or isinstance(v, RegularExpressionValue)
            found.append((k.regex, v))
    return found


def join_regex(h: Harness, member_id: str, regex: str) -> tuple[ErrorCode, str | None]:
    answer = h.heartbeat(
        member_id,
        0,
        subscribed_topic_names=[],
        subscribed_topic_regex=regex,
        owned_partitions=[],
        rebalance_timeout_ms=60_000,
    )
    return answer.error_code, answer.error_message


def test_a_member_subscribed_by_regex_gets_the_matching_topics() -> None:
    h = Harness()
    h.topics.put("foo-2", 2, FOO2)
    answer = h.heartbeat(
        "a",
        0,
        subscribed_topic_names=[],
        subscribed_topic_regex="foo.*",
        owned_partitions=[],
        rebalance_timeout_ms=60_000,
    )
    assert answer.error_code == ErrorCode.none
    assert partitions(answer) == {FOO: set(range(6)), FOO2: {0, 1}}
    assert h.group.subscribed_topic_names() == {"foo", "foo-2"}
    [(regex, value)] = regex_records(h)
    assert regex == "foo.*"
    assert value is not None
    assert sorted(value.topics) == ["foo", "foo-2"]
    assert value.version == h.topics.version
    assert value.timestamp == h.now


def test_the_regex_must_match_the_whole_name() -> None:
    h = Harness()
    h.topics.put("xfoo", 1)
    join_regex(h, "a", "fo")  # a prefix only: no match
    h.now += 11_000
    join_regex(h, "b", "^foo")  # RE2 anchors: still the whole name
    assert h.group.subscribed_topic_names() == {"foo"}
    assert {r: v.topics if v else None for r, v in regex_records(h)} == {
        "fo": (),
        "^foo": ("foo",),
    }


def test_internal_topics_match_like_any_other_as_in_kafka() -> None:
    # Kafka's resolver filters by DESCRIBE ACLs only, not by internal topics.
    h = Harness()
    h.topics.put("__consumer_offsets", 50)
    join_regex(h, "a", "__.*")
    assert h.group.subscribed_topic_names() == {"__consumer_offsets"}


def test_an_invalid_regex_is_refused_and_nothing_is_stored() -> None:
    h = Harness()
    code, message = join_regex(h, "a", "foo(")
    assert code == ErrorCode.invalid_regular_expression
    assert message is not None and "foo(" in message
    assert h.log == []
    assert h.coordinator.table.get("g") is None


def test_a_pattern_re2_rejects_is_invalid() -> None:
    # Backreferences are Java's and Python's, not RE2's.
    h = Harness()
    code, _ = join_regex(h, "a", r"(foo)\1")
    assert code == ErrorCode.invalid_regular_expression


def test_a_topic_created_later_is_picked_up_and_the_epoch_moves_on() -> None:
    h = Harness(regex_refresh_interval_ms=600_000)
    join_regex(h, "a", "foo.*")
    answer = h.heartbeat("a", 1, owned_partitions=[(FOO, list(range(6)))])
    assert answer.member_epoch == 1
    epoch = h.group.group_epoch

    h.topics.put("foo-2", 2, FOO2)
    h.now += 1_000  # within the 10 s since the last resolution: not yet
    h.heartbeat("a", 1)
    assert h.group.group_epoch == epoch
    assert h.group.subscribed_topic_names() == {"foo"}

    h.now += 10_000
    answer = h.heartbeat("a", 1)
    assert h.group.group_epoch == epoch + 1
    assert h.group.subscribed_topic_names() == {"foo", "foo-2"}
    assert answer.member_epoch == epoch + 1
    assert partitions(answer) == {FOO: set(range(6)), FOO2: {0, 1}}


def test_a_deleted_topic_leaves_the_resolution() -> None:
    h = Harness()
    h.topics.put("foo-2", 2, FOO2)
    join_regex(h, "a", "foo.*")
    epoch = h.group.group_epoch
    h.topics.delete("foo-2")
    h.now += 11_000
    answer = h.heartbeat("a", 1)
    assert h.group.group_epoch == epoch + 1
    assert h.group.regexes["foo.*"][0] == ("foo",)
    assert partitions(answer) == {FOO: set(range(6))}


def test_nothing_is_resolved_again_while_the_topics_stay_the_same() -> None:
    h = Harness(regex_refresh_interval_ms=600_000)
    join_regex(h, "a", "foo.*")
    h.heartbeat("a", 1, owned_partitions=[(FOO, list(range(6)))])
    written = len(h.log)
    for _ in range(20):
        h.now += 5_000
        h.heartbeat("a", 1)
    assert len(h.log) == written


def test_the_refresh_interval_resolves_again_without_topic_changes() -> None:
    h = Harness(regex_refresh_interval_ms=60_000)
    join_regex(h, "a", "foo.*")
    epoch = h.group.group_epoch
    h.now += 61_000
    h.heartbeat("a", 1)
    [_, (_, value)] = regex_records(h)
    assert value is not None and value.timestamp == 61_000
    assert h.group.group_epoch == epoch  # same topics: no rebalance


def test_two_members_share_one_resolution() -> None:
    h = Harness()
    join_regex(h, "a", "foo|bar")
    join_regex(h, "b", "foo|bar")
    assert len(regex_records(h)) == 1
    assert h.group.subscribed_topic_names() == {"foo", "bar"}
    # One leaving keeps the regex; the last one leaving drops it.
    h.heartbeat("a", -1)
    assert len(regex_records(h)) == 1
    h.heartbeat("b", -1)
    assert regex_records(h)[-1] == ("foo|bar", None)
    assert h.group.regexes == {}


def test_regex_and_literal_subscriptions_are_united() -> None:
    h = Harness()
    h.topics.put("foo-2", 2, FOO2)
    h.join("a", ["bar"])
    join_regex(h, "b", "foo.*")
    assert h.group.subscribed_topic_names() == {"foo", "foo-2", "bar"}
    targets = h.group.target_assignment
    assert set(targets["a"]) == {BAR}
    assert set(targets["b"]) == {FOO, FOO2}


def test_a_member_with_names_and_a_regex_gets_both() -> None:
    h = Harness()
    h.heartbeat(
        "a",
        0,
        subscribed_topic_names=["bar"],
        subscribed_topic_regex="fo+",
        owned_partitions=[],
        rebalance_timeout_ms=60_000,
    )
    assert set(h.group.target_assignment["a"]) == {FOO, BAR}


def test_a_regex_replaced_by_names_gets_a_tombstone() -> None:
    h = Harness()
    join_regex(h, "a", "foo.*")
    epoch = h.group.group_epoch
    h.heartbeat("a", 1, subscribed_topic_names=["bar"], subscribed_topic_regex="")
    assert regex_records(h)[-1] == ("foo.*", None)
    assert h.group.regexes == {}
    assert h.group.subscribed_topic_names() == {"bar"}
    assert h.group.group_epoch == epoch + 1


def test_a_fenced_member_drops_its_regex() -> None:
    h = Harness(session_timeout_ms=45_000)
    join_regex(h, "a", "foo.*")
    h.advance(45_001)
    assert "a" not in h.group.members
    assert regex_records(h)[-1] == ("foo.*", None)


def test_a_new_regex_waits_for_the_minimum_interval() -> None:
    h = Harness()
    join_regex(h, "a", "foo")
    h.now += 1_000
    join_regex(h, "b", "bar")
    assert "bar" not in h.group.regexes
    h.now += 10_000
    h.heartbeat("b", h.group.members["b"].member_epoch)
    assert h.group.regexes["bar"][0] == ("bar",)
    assert "bar" in h.group.subscribed_topic_names()


def test_replay_restores_the_resolution() -> None:
    h = Harness()
    h.topics.put("foo-2", 2, FOO2)
    join_regex(h, "a", "foo.*")
    join_regex(h, "b", "bar")
    h.heartbeat("a", 1, subscribed_topic_regex="ba.*")
    table = h.replayed()
    group = table.groups["g"]
    assert snapshot(group) == snapshot(h.group)
    assert group.regexes == h.group.regexes
    assert group.subscribed_topic_names() == h.group.subscribed_topic_names()

    # A coordinator on the replayed table carries on the same: nothing to
    # resolve again while the topics stay the same (after the interval, a
    # resolution finds the same topics: no new group epoch).
    h.coordinator = ConsumerGroupCoordinator(h.coordinator.config, table)
    h.coordinator.on_loaded(h.now)
    epoch = group.group_epoch
    h.now += 11_000
    h.heartbeat("b", group.members["b"].member_epoch)
    assert group.group_epoch == epoch
    assert group.regexes["ba.*"][0] == ("bar",)


@pytest.mark.parametrize("seed", range(8))
def test_random_regex_members_and_new_topics_settle_on_the_matching_topics(seed: int) -> None:
    rng = random.Random(seed)
    h = Harness(session_timeout_ms=20_000)
    subscriptions: list[tuple[tuple[str, ...], str | None]] = [
        ((), "ba.*"),
        ((), "foo|baz-[0-9]+"),
        (("foo",), "baz-1.*"),
        (("bar",), None),
    ]
    clients: list[Client] = []
    names = iter(f"c{i}" for i in range(1_000))
    created = 0
    for _ in range(300):
        action = rng.random()
        if action < 0.1 or not clients:
            topics, regex = rng.choice(subscriptions)
            clients.append(Client(next(names), topics, rng, regex))
        elif action < 0.13 and len(clients) > 1:
            leaving = clients.pop(rng.randrange(len(clients)))
            if leaving.epoch > 0:
                h.heartbeat(leaving.member_id, -1)
        elif action < 0.17:
            h.topics.put(f"baz-{created}", rng.randrange(1, 4))
            created += 1
        elif action < 0.3:
            h.now += rng.randrange(1, 4_000)  # no session ends: every client heartbeats
        else:
            rng.choice(clients).heartbeat(h)
        assert_no_partition_owned_twice(h, clients)
    # Once the minimum interval is past every regex is resolved against every
    # topic (a client rejoining with a regex new again waits for the next one).
    for _ in range(30):
        h.now += 1_000
        for client in clients:
            client.heartbeat(h)
            assert_no_partition_owned_twice(h, clients)
    assert h.group.state is ConsumerGroupState.STABLE
    owned = {(t, p) for c in clients for t, ps in c.owned.items() for p in ps}
    wanted = {name for c in clients for name in c.topics}
    for c in clients:
        if c.regex is not None:
            wanted |= {n for n in h.topics.topics if _fullmatch(c.regex, n)}
    expected = {
        (h.topics.topics[name].topic_id, p)
        for name in wanted
        for p in range(h.topics.topics[name].partitions)
    }
    assert owned == expected
    replayed = h.replayed().groups["g"]
    assert snapshot(replayed) == snapshot(h.group)
    assert replayed.regexes == h.group.regexes
    assert set(h.group.regexes) == {c.regex for c in clients if c.regex is not None}


def _fullmatch(regex: str, name: str) -> bool:
    # An independent oracle: these patterns mean the same in Python's syntax.
    return re.fullmatch(regex, name) is not None
