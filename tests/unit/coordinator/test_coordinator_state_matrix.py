"""Every group state against every request whose answer depends on it.

Each state is reached through the public API: a two-member group (leader
"client-1", follower "client-2") is formed and then pushed into the state.
"Dead" is a deleted group, which is what a client can ever see of Dead.

The cases are the cells of the coordinator's state table (``ANSWERS``); what
a client sees in each is written here, independently of the table, as Kafka
answers, and where the table answers with an error code it must be the one
written here.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kio.schema.errors import ErrorCode

from kgroups.coordinator import GroupState
from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.state import ANSWERS, Request

from .harness import Harness

LEADER, FOLLOWER = "client-1", "client-2"


def stable(config: CoordinatorConfig | None = None) -> tuple[Harness, int]:
    h = Harness(config)
    _, generation = h.form_group("g", 2)
    return h, generation


def completing(config: CoordinatorConfig | None = None) -> tuple[Harness, int]:
    h = Harness(config)
    joins = [h.join_new("g") for _ in range(2)]
    h.advance(6_000)
    assert all(h.reply(t) is not None for _, t in joins)
    assert h.shard.group("g").state is GroupState.COMPLETING_REBALANCE  # type: ignore[union-attr]
    return h, 1


def preparing(config: CoordinatorConfig | None = None) -> tuple[Harness, int]:
    h, generation = stable(config)
    h.join("g", LEADER)  # the leader rejoins: a rebalance starts, the follower has not rejoined
    return h, generation


def empty(config: CoordinatorConfig | None = None) -> tuple[Harness, int]:
    h, generation = stable(config)
    h.leave("g", (LEADER, None), (FOLLOWER, None))
    return h, generation


def dead(config: CoordinatorConfig | None = None) -> tuple[Harness, int]:
    h, generation = empty(config)
    assert h.delete_groups("g") == {"g": ErrorCode.none}
    return h, generation


STATES: dict[str, Callable[..., tuple[Harness, int]]] = {
    "Empty": empty,
    "PreparingRebalance": preparing,
    "CompletingRebalance": completing,
    "Stable": stable,
    "Dead": dead,
}


# Each request's row as a client sees it: {state: (error, state after)}.
SEEN: dict[Request, dict[str, tuple[ErrorCode | None, str]]] = {}


def cells(request: Request, expected: dict[str, tuple[ErrorCode | None, str]]) -> list[object]:
    """(state, expected error, state_after) for each state of the request's
    row: a state the table gains has no case until it is given its outcome here."""
    SEEN[request] = expected
    return [
        pytest.param(str(state), *expected[str(state)], id=str(state)) for state in ANSWERS[request]
    ]


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


@pytest.mark.parametrize(
    ("state", "expected", "state_after"),
    cells(
        Request.JOIN_AT_MAX_SIZE,
        {
            "Empty": (None, "PreparingRebalance"),  # parked for the initial delay
            "PreparingRebalance": (None, "PreparingRebalance"),  # one join parked of two
            "CompletingRebalance": (ErrorCode.group_max_size_reached, "CompletingRebalance"),
            "Stable": (ErrorCode.group_max_size_reached, "Stable"),
            "Dead": (None, "PreparingRebalance"),  # created anew
        },
    ),
)
def test_join_group_by_a_new_member_at_max_size(
    state: str, expected: ErrorCode | None, state_after: str
) -> None:
    h, _ = STATES[state](CoordinatorConfig(max_size=2))
    response = h.reply(h.join("g", version=3))  # joins at once, without a member id first
    if expected is None:
        assert response is None
    else:
        assert response.error_code is expected
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


def static_stable() -> tuple[Harness, int]:
    """A Stable group of static members: i1 (the leader) and i2."""
    h = Harness()
    tokens = [h.join("g", instance=i) for i in ("i1", "i2")]
    h.advance(6_000)
    i1, i2 = (h.reply(t) for t in tokens)
    h.sync("g", i1.member_id, i1.generation_id, {}, instance="i1")
    h.sync("g", i2.member_id, i2.generation_id, instance="i2")
    return h, i1.generation_id


def static_completing() -> tuple[Harness, int]:
    h = Harness()
    tokens = [h.join("g", instance=i) for i in ("i1", "i2")]
    h.advance(6_000)
    return h, h.reply(tokens[0]).generation_id


def static_preparing() -> tuple[Harness, int]:
    h, generation = static_stable()
    h.join("g", h.shard.group("g").leader_id, instance="i1")  # type: ignore[union-attr]
    return h, generation


STATIC_STATES = {
    "PreparingRebalance": static_preparing,
    "CompletingRebalance": static_completing,
    "Stable": static_stable,
}


@pytest.mark.parametrize(
    ("state", "expected", "state_after"),
    cells(
        Request.STATIC_REJOIN,
        {
            # i2 was the last one missing: the join phase completes at once.
            "PreparingRebalance": (ErrorCode.none, "CompletingRebalance"),
            "CompletingRebalance": (None, "PreparingRebalance"),  # parked: a new rebalance
            "Stable": (ErrorCode.none, "Stable"),  # same protocol: the same generation
        },
    ),
)
def test_join_group_by_a_restarted_static_member(
    state: str, expected: ErrorCode | None, state_after: str
) -> None:
    h, generation = STATIC_STATES[state]()
    group = h.shard.group("g")
    assert group is not None
    (old_id,) = [m.member_id for m in group.members if m.group_instance_id == "i2"]
    response = h.reply(h.join("g", instance="i2"))
    if expected is None:
        assert response is None
    else:
        assert response.error_code is expected
        assert response.member_id != old_id
        assert response.generation_id == generation + (state == "PreparingRebalance")
    assert state_of(h) == state_after


@pytest.mark.parametrize(
    ("state", "expected", "state_after"),
    cells(
        Request.OFFSET_COMMIT,
        {
            "Empty": (ErrorCode.unknown_member_id, "Empty"),
            # Members of the previous generation may: the heartbeat tells them.
            "PreparingRebalance": (ErrorCode.none, "PreparingRebalance"),
            "CompletingRebalance": (ErrorCode.rebalance_in_progress, "CompletingRebalance"),
            "Stable": (ErrorCode.none, "Stable"),
            # At v9, as Kafka 4.x; v8 and older get ILLEGAL_GENERATION (test_coordinator_offsets).
            "Dead": (ErrorCode.group_id_not_found, "Dead"),
        },
    ),
)
def test_offset_commit_by_a_member(state: str, expected: ErrorCode, state_after: str) -> None:
    h, generation = STATES[state]()
    errors = h.commit("g", {("t", 0): 10}, member_id=FOLLOWER, generation=generation)
    assert errors == {("t", 0): expected}
    stored = (10, -1, "") if expected is ErrorCode.none else (-1, -1, "")
    assert h.fetch("g", {"t": [0]}) == {("t", 0): stored}
    assert state_of(h) == state_after


@pytest.mark.parametrize(
    ("state", "expected", "state_after"),
    cells(
        Request.SIMPLE_OFFSET_COMMIT,
        {
            "Empty": (ErrorCode.none, "Empty"),
            "PreparingRebalance": (ErrorCode.unknown_member_id, "PreparingRebalance"),
            "CompletingRebalance": (ErrorCode.unknown_member_id, "CompletingRebalance"),
            "Stable": (ErrorCode.unknown_member_id, "Stable"),
            "Dead": (ErrorCode.none, "Empty"),  # a simple commit creates the group again
        },
    ),
)
def test_simple_offset_commit(state: str, expected: ErrorCode, state_after: str) -> None:
    h, _ = STATES[state]()
    assert h.commit("g", {("t", 0): 10}) == {("t", 0): expected}
    stored = (10, -1, "") if expected is ErrorCode.none else (-1, -1, "")
    assert h.fetch("g", {"t": [0]}) == {("t", 0): stored}
    assert state_of(h) == state_after


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("Empty", ErrorCode.none),  # no members to ask for a generation
        ("PreparingRebalance", ErrorCode.illegal_generation),
        ("CompletingRebalance", ErrorCode.illegal_generation),
        ("Stable", ErrorCode.illegal_generation),
        ("Dead", ErrorCode.none),
    ],
)
def test_offset_commit_by_a_member_without_a_generation(state: str, expected: ErrorCode) -> None:
    h, _ = STATES[state]()
    assert h.commit("g", {("t", 0): 10}, member_id=FOLLOWER) == {("t", 0): expected}


@pytest.mark.parametrize(
    ("state", "expected", "state_after"),
    cells(
        Request.OFFSET_FETCH,
        {state: (None, state) for state in STATES},  # read whatever the state
    ),
)
def test_offset_fetch(state: str, expected: None, state_after: str) -> None:
    h, _ = STATES[state]()
    h.commit("other", {("t", 1): 3})
    assert h.fetch("g", {"t": [0]}) == {("t", 0): (-1, -1, "")}
    assert h.fetch("other") == {("t", 1): (3, -1, "")}
    assert state_of(h) == state_after


def test_offset_fetch_reads_a_member_commit_while_the_group_rebalances() -> None:
    h, generation = stable()
    h.commit("g", {("t", 0): 7}, member_id=FOLLOWER, generation=generation)
    h.join("g", LEADER)
    assert state_of(h) == "PreparingRebalance"
    assert h.fetch("g") == {("t", 0): (7, -1, "")}


@pytest.mark.parametrize(
    ("state", "expected", "state_after"),
    cells(
        Request.OFFSET_DELETE,
        {
            "Empty": (ErrorCode.none, "Dead"),  # its last offset gone, the group goes
            # The members' subscriptions are unreadable: subscribed to every topic.
            "PreparingRebalance": (ErrorCode.group_subscribed_to_topic, "PreparingRebalance"),
            "CompletingRebalance": (ErrorCode.group_subscribed_to_topic, "CompletingRebalance"),
            "Stable": (ErrorCode.group_subscribed_to_topic, "Stable"),
            "Dead": (ErrorCode.group_id_not_found, "Dead"),
        },
    ),
)
def test_offset_delete(state: str, expected: ErrorCode, state_after: str) -> None:
    h, _ = STATES[state]()
    response = h.delete_offsets("g", {"t": [0]})
    if state == "Dead":
        assert response.error_code is expected
        assert response.topics == ()
    else:
        assert response.error_code is ErrorCode.none
        ((topic,),) = [t.partitions for t in response.topics]
        assert topic.error_code is expected
    assert state_of(h) == state_after


def test_offset_delete_keeps_what_an_empty_group_was_not_asked_for() -> None:
    h, _ = empty()
    h.commit("g", {("t", 0): 1, ("t", 1): 2})
    assert h.delete_offsets("g", {"t": [0]}).topics[0].partitions[0].error_code is ErrorCode.none
    assert h.fetch("g") == {("t", 1): (2, -1, "")}
    assert state_of(h) == "Empty"


@pytest.mark.parametrize(
    ("state", "expected", "state_after"),
    cells(
        Request.DELETE_GROUPS,
        {
            "Empty": (ErrorCode.none, "Dead"),
            "PreparingRebalance": (ErrorCode.non_empty_group, "PreparingRebalance"),
            "CompletingRebalance": (ErrorCode.non_empty_group, "CompletingRebalance"),
            "Stable": (ErrorCode.non_empty_group, "Stable"),
            "Dead": (ErrorCode.group_id_not_found, "Dead"),
        },
    ),
)
def test_delete_groups(state: str, expected: ErrorCode, state_after: str) -> None:
    h, _ = STATES[state]()
    assert h.delete_groups("g") == {"g": expected}
    assert state_of(h) == state_after


@pytest.mark.parametrize("request_", list(Request), ids=str)
def test_the_table_answers_what_clients_see(request_: Request) -> None:
    """Every row has its cases here, and each error code of the table is the
    one a client sees in that state."""
    seen = SEEN[request_]
    for state, answer in ANSWERS[request_].items():
        if isinstance(answer, ErrorCode):
            assert seen[str(state)][0] is answer, state
