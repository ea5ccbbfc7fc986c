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
    GroupState,
    IllegalTransition,
    Request,
    answers_by_state,
    can_transition,
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


def test_every_request_answers_in_every_state() -> None:
    assert list(ANSWERS) == list(Request)
    for row in ANSWERS.values():
        assert list(row) == list(GroupState)


def test_a_handler_applies_the_rules_of_its_row() -> None:
    answers = answers_by_state(
        Request.HEARTBEAT, {KEEP_ALIVE: "alive", KEEP_ALIVE_IN_REBALANCE: "rebalancing"}
    )
    assert answers == {
        E: ErrorCode.unknown_member_id,
        P: "rebalancing",
        C: "alive",
        S: "alive",
        D: ErrorCode.coordinator_not_available,
    }
    with pytest.raises(ValueError, match="Heartbeat"):
        answers_by_state(Request.HEARTBEAT, {KEEP_ALIVE: "alive"})
