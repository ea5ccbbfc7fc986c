import pytest

from kgroups.transactions.state import (
    VALID_PREVIOUS,
    IllegalTransition,
    TxnMetadata,
    TxnState,
)

S = TxnState


def test_states_have_kafkas_bytes_and_names() -> None:
    assert [(s.byte, s.state_name) for s in S] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]
    assert S.from_name("PrepareAbort") is S.PREPARE_ABORT
    assert S.from_name("prepareabort") is None


# Kafka's TransactionState: each state and the states it may follow.
KAFKA = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}


@pytest.mark.parametrize("before", list(S))
@pytest.mark.parametrize("after", list(S))
def test_only_kafkas_transitions_are_allowed(before: TxnState, after: TxnState) -> None:
    assert VALID_PREVIOUS[after] == KAFKA[after]
    meta = TxnMetadata("tx", 1, state=before)
    if before in KAFKA[after]:
        assert meta.transit(after, 5).state is after
    else:
        with pytest.raises(IllegalTransition):
            meta.transit(after, 5)


def test_no_transition_while_one_is_pending() -> None:
    meta = TxnMetadata("tx", 1, state=S.ONGOING, pending=S.PREPARE_COMMIT)
    with pytest.raises(IllegalTransition):
        meta.transit(S.PREPARE_ABORT, 5)
