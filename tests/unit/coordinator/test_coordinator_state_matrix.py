"""Every group state against every membership request, from a follower.

Each state is reached through the public API: a two-member group (leader
"client-1", follower "client-2") is formed and then pushed into the state.
"Dead" is a deleted group, which is what a client can ever see of Dead.

The cases of JoinGroup, SyncGroup, Heartbeat and LeaveGroup are the cells of
their rows in the coordinator's state table (``ANSWERS``); what a client sees
in each is written here, independently of the table, as Kafka answers.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kio.schema.errors import ErrorCode

from kgroups.coordinator import GroupState
from kgroups.coordinator.state import ANSWERS, Request

from .harness import Harness

LEADER, FOLLOWER = "client-1", "client-2"


def stable() -> tuple[Harness, int]:
    h = Harness()
    _, generation = h.form_group("g", 2)
    return h, generation


def completing() -> tuple[Harness, int]:
    h = Harness()
    joins = [h.join_new("g") for _ in range(2)]
    h.advance(6_000)
    assert all(h.reply(t) is not None for _, t in joins)
    assert h.shard.group("g").state is GroupState.COMPLETING_REBALANCE  # type: ignore[union-attr]
    return h, 1


def preparing() -> tuple[Harness, int]:
    h, generation = stable()
    h.join("g", LEADER)  # the leader rejoins: a rebalance starts, the follower has not rejoined
    return h, generation


def empty() -> tuple[Harness, int]:
    h, generation = stable()
    h.leave("g", (LEADER, None), (FOLLOWER, None))
    return h, generation


def dead() -> tuple[Harness, int]:
    h, generation = empty()
    assert h.delete_groups("g") == {"g": ErrorCode.none}
    return h, generation


STATES: dict[str, Callable[[], tuple[Harness, int]]] = {
    "Empty": empty,
    "PreparingRebalance": preparing,
    "CompletingRebalance": completing,
    "Stable": stable,
    "Dead": dead,
}


def cells(request: Request, expected: dict[str, tuple[object, str]]) -> list[tuple[object, ...]]:
    """(state, expected, state_after) for each state of the request's row: a
    state the table gains has no case until it is given its outcome here."""
    return [(str(state), *expected[str(state)]) for state in ANSWERS[request]]


def state_of(h: Harness) -> str:
    group = h.shard.group("g")
    return "Dead" if group is None else str(group.state)


@pytest.mark.parametrize("state", STATES)
def test_each_state_is_reached(state: str) -> None:
    h, _ = STATES[state]()
    assert state_of(h) == state


@pytest.mark.parametrize(
    ("state", "expected", "state_after"),
    cells(
        Request.HEARTBEAT,
        {
            "Empty": (ErrorCode.unknown_member_id, "Empty"),
            "PreparingRebalance": (ErrorCode.rebalance_in_progress, "PreparingRebalance"),
            "CompletingRebalance": (ErrorCode.none, "CompletingRebalance"),
            "Stable": (ErrorCode.none, "Stable"),
            "Dead": (ErrorCode.unknown_member_id, "Dead"),
        },
    ),
)
def test_heartbeat(state: str, expected: ErrorCode, state_after: str) -> None:
    h, generation = STATES[state]()
    assert h.heartbeat("g", FOLLOWER, generation) is expected
    assert state_of(h) == state_after


@pytest.mark.parametrize(
    ("state", "expected", "state_after"),
    cells(
        Request.SYNC_GROUP,
        {
            "Empty": (ErrorCode.unknown_member_id, "Empty"),
            "PreparingRebalance": (ErrorCode.rebalance_in_progress, "PreparingRebalance"),
            "CompletingRebalance": (None, "CompletingRebalance"),  # parked for the leader
            "Stable": (ErrorCode.none, "Stable"),
            "Dead": (ErrorCode.unknown_member_id, "Dead"),
        },
    ),
)
def test_sync_group(state: str, expected: ErrorCode | None, state_after: str) -> None:
    h, generation = STATES[state]()
    token = h.sync("g", FOLLOWER, generation)
    response = h.reply(token)
    if expected is None:
        assert response is None
    else:
        assert response.error_code is expected
    assert state_of(h) == state_after


def test_sync_in_stable_returns_the_stored_assignment() -> None:
    h, generation = stable()
    response = h.reply(h.sync("g", FOLLOWER, generation))
    assert response.assignment == b"assignment-client-2"
    assert (response.protocol_type, response.protocol_name) == ("consumer", "range")


@pytest.mark.parametrize(
    ("state", "expected", "state_after"),
    cells(
        Request.JOIN_GROUP,
        {
            "Empty": (ErrorCode.unknown_member_id, "Empty"),
            "PreparingRebalance": (None, "PreparingRebalance"),  # parked until all rejoin
            "CompletingRebalance": (ErrorCode.none, "CompletingRebalance"),  # same metadata
            "Stable": (ErrorCode.none, "Stable"),  # follower, same metadata
            "Dead": (ErrorCode.unknown_member_id, "Dead"),
        },
    ),
)
def test_join_group_by_a_known_member(
    state: str, expected: ErrorCode | None, state_after: str
) -> None:
    h, generation = STATES[state]()
    response = h.reply(h.join("g", FOLLOWER))
    if state == "PreparingRebalance":
        # The follower was the last one missing: the join phase completes at once.
        assert response.error_code is ErrorCode.none
        assert response.generation_id == generation + 1
        assert state_of(h) == "CompletingRebalance"
        return
    assert response.error_code is expected
    if expected is ErrorCode.none:
        assert response.generation_id == generation
        assert response.leader == LEADER
        assert response.members == ()
    assert state_of(h) == state_after


@pytest.mark.parametrize("state", STATES)
def test_join_group_by_a_new_member_needs_a_member_id_first(state: str) -> None:
    h, _ = STATES[state]()
    response = h.reply(h.join("g"))
    assert response.error_code is ErrorCode.member_id_required
    assert response.member_id.startswith("client-")
    expected_state = "Empty" if state == "Dead" else state  # deleted groups are created anew
    assert state_of(h) == expected_state


@pytest.mark.parametrize(
    ("state", "expected", "state_after"),
    cells(
        Request.LEAVE_GROUP,
        {
            "Empty": (ErrorCode.unknown_member_id, "Empty"),
            "PreparingRebalance": (ErrorCode.none, "CompletingRebalance"),
            "CompletingRebalance": (ErrorCode.none, "PreparingRebalance"),
            "Stable": (ErrorCode.none, "PreparingRebalance"),
            "Dead": (ErrorCode.unknown_member_id, "Dead"),
        },
    ),
)
def test_leave_group(state: str, expected: ErrorCode, state_after: str) -> None:
    h, _ = STATES[state]()
    response = h.leave("g", (FOLLOWER, None))
    assert response.error_code is ErrorCode.none
    ((member),) = response.members
    assert member.error_code is expected
    # In PreparingRebalance the leader alone had rejoined: its join phase completes.
    assert state_of(h) == state_after


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("Empty", ErrorCode.unknown_member_id),
        ("PreparingRebalance", ErrorCode.none),  # members of the previous generation may
        ("CompletingRebalance", ErrorCode.rebalance_in_progress),
        ("Stable", ErrorCode.none),
        ("Dead", ErrorCode.illegal_generation),
    ],
)
def test_offset_commit_by_a_member(state: str, expected: ErrorCode) -> None:
    h, generation = STATES[state]()
    errors = h.commit("g", {("t", 0): 10}, member_id=FOLLOWER, generation=generation)
    assert errors == {("t", 0): expected}


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("Empty", ErrorCode.none),
        ("PreparingRebalance", ErrorCode.unknown_member_id),
        ("CompletingRebalance", ErrorCode.unknown_member_id),
        ("Stable", ErrorCode.unknown_member_id),
        ("Dead", ErrorCode.none),  # a simple commit creates the group again
    ],
)
def test_simple_offset_commit(state: str, expected: ErrorCode) -> None:
    h, _ = STATES[state]()
    assert h.commit("g", {("t", 0): 10}) == {("t", 0): expected}


@pytest.mark.parametrize("state", STATES)
def test_offset_fetch_works_in_every_state(state: str) -> None:
    h, _ = STATES[state]()
    h.commit("other", {("t", 1): 3})
    assert h.fetch("g", {"t": [0]}) == {("t", 0): (-1, -1, "")}
    assert h.fetch("other") == {("t", 1): (3, -1, "")}
