"""Group bookkeeping: protocol vote, protocol support, leader election."""

from __future__ import annotations

from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.member import Member
from kgroups.coordinator.state import GroupState


def member(member_id: str, *protocols: str, joined: bool = True) -> Member:
    return Member(
        member_id=member_id,
        group_instance_id=None,
        client_id="c",
        client_host="h",
        rebalance_timeout_ms=1000,
        session_timeout_ms=1000,
        protocol_type="consumer",
        protocols=tuple((p, p.encode()) for p in protocols),
        awaiting_join=object() if joined else None,
    )


def test_vote_picks_the_common_protocol_most_members_prefer() -> None:
    group = ClassicGroup("g", GroupState.PREPARING_REBALANCE)
    group.add(member("a", "roundrobin", "range", "sticky"))
    group.add(member("b", "range", "roundrobin", "sticky"))
    group.add(member("c", "range", "sticky"))
    # roundrobin is not supported by c; of range and sticky, all prefer range.
    assert group.select_protocol() == "range"


def test_vote_counts_preferences_not_support() -> None:
    group = ClassicGroup("g", GroupState.PREPARING_REBALANCE)
    group.add(member("a", "sticky", "range"))
    group.add(member("b", "sticky", "range"))
    group.add(member("c", "range", "sticky"))
    assert group.select_protocol() == "sticky"


def test_a_joining_member_needs_a_protocol_everyone_supports() -> None:
    group = ClassicGroup("g", GroupState.EMPTY)
    assert not group.supports_protocols("", frozenset({"range"}))
    assert not group.supports_protocols("consumer", frozenset())
    assert group.supports_protocols("consumer", frozenset({"range"}))
    group.transition_to(GroupState.PREPARING_REBALANCE, 0)
    group.add(member("a", "range", "sticky"))
    group.add(member("b", "sticky"))
    assert group.supports_protocols("consumer", frozenset({"sticky", "x"}))
    assert not group.supports_protocols("consumer", frozenset({"range"}))
    assert not group.supports_protocols("connect", frozenset({"sticky"}))


def test_leader_moves_to_another_member_when_it_leaves() -> None:
    group = ClassicGroup("g", GroupState.PREPARING_REBALANCE)
    group.add(member("a", "range"))
    group.add(member("b", "range"))
    assert group.leader_id == "a"
    group.remove("a")
    assert group.leader_id == "b"
    group.remove("b")
    assert group.leader_id is None


def test_a_leader_that_did_not_rejoin_is_replaced_by_one_that_did() -> None:
    group = ClassicGroup("g", GroupState.PREPARING_REBALANCE)
    group.add(member("a", "range", joined=False))
    group.add(member("b", "range", joined=False))
    group.add(member("c", "range", joined=True))
    assert group.maybe_elect_new_joined_leader()
    assert group.leader_id == "c"


def test_no_leader_is_elected_when_nobody_rejoined() -> None:
    group = ClassicGroup("g", GroupState.PREPARING_REBALANCE)
    group.add(member("a", "range", joined=False))
    assert not group.maybe_elect_new_joined_leader()
    assert group.leader_id == "a"


def test_counts_of_parked_joins_follow_park_and_take() -> None:
    group = ClassicGroup("g", GroupState.PREPARING_REBALANCE)
    a = member("a", "range", joined=False)
    group.add(a)
    assert not group.has_all_members_joined()
    group.park_join(a, "token", 9)
    group.park_join(a, "token2", 9)
    assert group.num_awaiting_join == 1
    assert group.has_all_members_joined()
    group.pending_members.add("p")
    assert not group.has_all_members_joined()
    assert group.take_join(a) == "token2"
    assert group.num_awaiting_join == 0
