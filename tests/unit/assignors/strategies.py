"""Hypothesis strategies for groups: topics, partition counts, members."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from kgroups.assignors import Subscription

TOPICS = ["t0", "t1", "t2", "t3", "t4", "t5"]


@dataclass
class Group:
    partitions_per_topic: dict[str, int]
    subscriptions: dict[str, Subscription]


@st.composite
def groups(
    draw: st.DrawFn,
    *,
    identical: bool | None = None,
    max_members: int = 8,
    max_partitions: int = 12,
    static_members: bool = True,
    racks: bool = False,
) -> Group:
    """A group of members subscribed to some topics, most of which exist.

    ``identical``: all members subscribe to the same topics (True), not
    necessarily (None), or any (False, still sometimes identical).
    """
    topics = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=5, unique=True))
    partitions_per_topic = {
        t: draw(st.integers(0, max_partitions)) for t in topics if draw(st.integers(0, 9)) > 0
    }
    member_count = draw(st.integers(1, max_members))
    member_ids = draw(
        st.lists(
            st.text("abcdefgh-0123", min_size=1, max_size=6),
            min_size=member_count,
            max_size=member_count,
            unique=True,
        )
    )
    shared = draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
    subscriptions = {}
    for member_id in member_ids:
        if identical:
            chosen = list(shared)
        else:
            chosen = draw(st.lists(st.sampled_from(topics), min_size=0, unique=True))
        instance_id = (
            draw(st.one_of(st.none(), st.text("xyz", min_size=1, max_size=3)))
            if static_members
            else None
        )
        rack = draw(st.sampled_from([None, "a", "b", "c"])) if racks else None
        subscriptions[member_id] = Subscription(chosen, rack_id=rack, group_instance_id=instance_id)
    return Group(partitions_per_topic, subscriptions)
