"""The rebalance listener is called with the right partitions, in the right order.

Under EAGER every member gives up everything before each rebalance; under
COOPERATIVE (KIP-429) only partitions that move are revoked, after the
rebalance that decides it, and their new owner gets them in a follow-up
rebalance -- never before the old owner let go.
"""

from __future__ import annotations

import time

import pytest

from broker_thread import BrokerThread
from interop.group_members import Member, wait_until
from interop.test_client_support import (
    PARTITIONS,
    MemberListener,
    Timeline,
    create_topic,
    kgroups_member,
)

pytestmark = pytest.mark.interop

ALL = list(range(PARTITIONS))


def _calls(member: Member) -> list[tuple[str, list[int]]]:
    listener: MemberListener = member.listener  # type: ignore[attr-defined]
    return list(listener.calls)


def _settle(members: list[Member], seconds: float = 0.8) -> None:
    """Wait until no hook has been called for a while."""
    last = -1
    while True:
        count = sum(len(_calls(m)) for m in members)
        if count == last:
            return
        last = count
        time.sleep(seconds)


def test_eager_revokes_everything_before_each_rebalance(broker: BrokerThread) -> None:
    topic = group = "listener-eager"
    create_topic(broker.bootstrap, topic)
    timeline = Timeline()
    a = kgroups_member(broker.bootstrap, group, topic, "a", "range", timeline)
    b: Member | None = None
    try:
        wait_until(lambda: a.assigned == set(ALL), 20, "a to own everything")
        b = kgroups_member(broker.bootstrap, group, topic, "b", "range", timeline)
        wait_until(lambda: len(a.assigned) == len(b.assigned) == 3, 20, "a and b to split")
        _settle([a, b])
        kept, gained = sorted(a.assigned), sorted(b.assigned)
        assert _calls(a) == [("assigned", ALL), ("revoked", ALL), ("assigned", kept)]
        assert _calls(b) == [("assigned", gained)]
        # b got its partitions only after a gave everything up.
        assert timeline.index("a", "revoked", ALL) < timeline.index("b", "assigned", gained)

        b.close()
        wait_until(lambda: a.assigned == set(ALL), 20, "a to own everything again")
        _settle([a])
        assert _calls(b)[-1] == ("revoked", gained)  # on close
        assert _calls(a)[-2:] == [("revoked", kept), ("assigned", ALL)]
    finally:
        a.close()
        if b is not None:
            b.close()
    assert _calls(a)[-1] == ("revoked", ALL)


def test_cooperative_revokes_only_what_moves(broker: BrokerThread) -> None:
    topic = group = "listener-cooperative"
    create_topic(broker.bootstrap, topic)
    timeline = Timeline()
    a = kgroups_member(broker.bootstrap, group, topic, "a", "cooperative-sticky", timeline)
    b: Member | None = None
    try:
        wait_until(lambda: a.assigned == set(ALL), 20, "a to own everything")
        b = kgroups_member(broker.bootstrap, group, topic, "b", "cooperative-sticky", timeline)
        wait_until(lambda: len(a.assigned) == len(b.assigned) == 3, 20, "a and b to split")
        _settle([a, b])
        moved = sorted(b.assigned)
        # First rebalance: a keeps three, gives up the other three, gains nothing;
        # b gets nothing yet. Follow-up rebalance: b gets the three a gave up.
        assert _calls(a) == [
            ("assigned", ALL),
            ("revoked", moved),
            ("assigned", []),
            ("assigned", []),
        ]
        assert _calls(b) == [("assigned", []), ("assigned", moved)]
        assert timeline.index("a", "revoked", moved) < timeline.index("b", "assigned", moved)

        # b leaves: a just gains b's partitions; nothing of a's is revoked.
        b.close()
        wait_until(lambda: a.assigned == set(ALL), 20, "a to own everything again")
        _settle([a])
        assert _calls(a)[-1] == ("assigned", moved)
        assert ("revoked", sorted(set(ALL) - set(moved))) not in _calls(a)
    finally:
        a.close()
        if b is not None:
            b.close()
