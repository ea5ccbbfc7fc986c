"""The transition table: what is allowed, and that anything else raises."""

from __future__ import annotations

import pytest

from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.state import GroupState, IllegalTransition, can_transition

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
