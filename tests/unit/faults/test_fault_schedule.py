"""A fault schedule is a function of its seed, and holds at most the allowed
number of faults at once, never two on one broker."""

from __future__ import annotations

from faults.nemesis import schedule


def test_a_seed_gives_the_same_schedule_and_another_seed_another() -> None:
    assert schedule(7, 600, 3) == schedule(7, 600, 3)
    assert schedule(7, 600, 3) != schedule(8, 600, 3)


def test_faults_held_at_once_stay_within_the_bound_and_on_distinct_brokers() -> None:
    for seed in range(20):
        faults = schedule(seed, 300, 3, concurrency=2)
        assert faults and all(f.at + f.hold <= 300 for f in faults)
        for f in faults:
            held = [g for g in faults if g.at <= f.at < g.at + g.hold]
            assert len(held) <= 2
            assert len({g.target for g in held}) == len(held)


def test_only_the_kinds_asked_for() -> None:
    assert {f.kind for f in schedule(1, 300, 3, kinds=("pause",))} == {"pause"}
