from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from kgroups.cluster.leader_spread import TopicPartition, spread_leaders


def topic(
    name: str, partitions: int, leader: int | None = None
) -> dict[TopicPartition, int | None]:
    return {(name, p): leader for p in range(partitions)}


def per_broker(spread: dict[TopicPartition, int], name: str) -> Counter[int]:
    return Counter(b for (t, _), b in spread.items() if t == name)


def test_each_topic_is_spread_evenly_over_the_live_brokers() -> None:
    spread = spread_leaders({**topic("__consumer_offsets", 50), **topic("data", 3)}, [1, 2, 3])
    assert sorted(per_broker(spread, "__consumer_offsets").values()) == [16, 17, 17]
    assert per_broker(spread, "data") == {1: 1, 2: 1, 3: 1}


def test_many_single_partition_topics_do_not_pile_on_one_broker() -> None:
    spread = spread_leaders({tp: None for i in range(9) for tp in topic(f"t{i}", 1)}, [1, 2, 3])
    assert Counter(spread.values()) == {1: 3, 2: 3, 3: 3}


def test_a_leaving_broker_moves_only_its_own_partitions() -> None:
    before = spread_leaders(topic("t", 12), [1, 2, 3])
    current = {tp: (None if b == 2 else b) for tp, b in before.items()}
    after = spread_leaders(current, [1, 3])
    assert {tp for tp in before if before[tp] != after[tp]} == {
        tp for tp, b in before.items() if b == 2
    }
    assert per_broker(after, "t") == {1: 6, 3: 6}


def test_a_joining_broker_takes_only_its_share() -> None:
    before = spread_leaders(topic("t", 12), [1, 2])
    after = spread_leaders(dict(before), [1, 2, 3])
    moved = [tp for tp in before if before[tp] != after[tp]]
    assert len(moved) == 4 and all(after[tp] == 3 for tp in moved)


def test_no_live_broker_means_no_leader() -> None:
    assert spread_leaders(topic("t", 3, leader=1), []) == {}


@given(
    st.dictionaries(
        st.tuples(st.sampled_from("abc"), st.integers(0, 20)),
        st.one_of(st.none(), st.integers(1, 6)),
        max_size=60,
    ),
    st.sets(st.integers(1, 6), min_size=1),
)
def test_spread_is_even_stable_and_deterministic(
    current: dict[TopicPartition, int | None], live: set[int]
) -> None:
    spread = spread_leaders(current, live)
    assert spread.keys() == current.keys()
    assert set(spread.values()) <= live
    for name in {t for t, _ in current}:
        counts = per_broker(spread, name)
        loads = [counts.get(b, 0) for b in live]
        assert max(loads) - min(loads) <= 1
    assert spread_leaders(current, sorted(live, reverse=True)) == spread
    assert spread_leaders(dict(spread), live) == spread  # a balanced spread stays put
