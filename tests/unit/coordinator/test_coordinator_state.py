"""The transition table: what is allowed, and that anything else raises; and
the answers table: each handler applies exactly the rules of its row."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.state import (
    ANSWERS,
    KEEP_ALIVE,
    KEEP_ALIVE_IN_REBALANCE,
    READ_OFFSETS,
    GroupState,
    IllegalTransition,
    Request,
    answer_without_group,
    answers_by_state,
    can_transition,
    rules_by_state,
)

E = GroupState.EMPTY
P = GroupState.PREPARING_REBALANCE
C = GroupState.COMPLETING_REBALANCE
S = GroupState.STABLE
D = GroupState.DEAD

ALLOWED = {(P, E), (E, P), (S, P), (C, P), (P, C), (C, S)} | {(x, D) for x in GroupState}


@pytest.mark.parametrize("source", list(GroupState))
@pytest.mark.parametrize("target", list(GroupState))
def test_transition_table(source: GroupState, target: GroupState) -> None:
    assert can_transition(source, target) == ((source, target) in ALLOWED)
    group = ClassicGroup("g", source)
    if (source, target) in ALLOWED:
        group.transition_to(target, 5)
        assert group.state is target
        assert group.state_timestamp_ms == 5
    else:
        with pytest.raises(IllegalTransition):
            group.transition_to(target, 5)
        assert group.state is source


def test_state_names_are_kafkas() -> None:
    assert [str(s) for s in GroupState] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]
    assert P.lower_name == "preparingrebalance"


def test_every_request_answers_in_every_state_it_can_meet() -> None:
    assert list(ANSWERS) == list(Request)
    for request, row in ANSWERS.items():
        if request is Request.STATIC_REJOIN:
            # Only a group with members knows a static member.
            assert list(row) == [P, C, S]
        else:
            assert list(row) == list(GroupState)


def test_a_group_the_table_does_not_hold_is_answered_by_the_dead_column() -> None:
    assert answer_without_group(Request.HEARTBEAT) is ErrorCode.unknown_member_id
    with pytest.raises(ValueError, match="not_found_from_v9"):
        answer_without_group(Request.OFFSET_COMMIT)  # its answer depends on the version
    with pytest.raises(ValueError, match="generation -1"):
        answer_without_group(Request.SIMPLE_OFFSET_COMMIT)


def test_a_row_of_rules_only() -> None:
    assert rules_by_state(Request.OFFSET_FETCH, {READ_OFFSETS: "read"}) == dict.fromkeys(
        GroupState, "read"
    )
    with pytest.raises(ValueError, match="Heartbeat answers unknown_member_id"):
        rules_by_state(
            Request.HEARTBEAT, {KEEP_ALIVE: "alive", KEEP_ALIVE_IN_REBALANCE: "rebalancing"}
        )


def test_a_handler_applies_the_rules_of_its_row() -> None:
    answers = answers_by_state(
        Request.HEARTBEAT, {KEEP_ALIVE: "alive", KEEP_ALIVE_IN_REBALANCE: "rebalancing"}
    )
    assert answers == {
        E: ErrorCode.unknown_member_id,
        P: "rebalancing",
        C: "alive",
        S: "alive",
        D: ErrorCode.unknown_member_id,
    }
    with pytest.raises(ValueError, match="Heartbeat"):
        answers_by_state(Request.HEARTBEAT, {KEEP_ALIVE: "alive"})
