"""The transaction coordinator's answers, records and markers, as Kafka's."""

from __future__ import annotations

import pytest

from kgroups.errors import ErrorCode
from kgroups.topics.placement import OFFSETS_TOPIC, partition_for_group
from kgroups.transactions.config import TransactionConfig
from kgroups.transactions.messages import EndTxn, EndTxnAnswer, InitProducerIdAnswer
from kgroups.transactions.records import (
    TransactionLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from kgroups.transactions.state import MAX_PRODUCER_EPOCH, TxnState

from .harness import Coordinator

T0 = ("orders", 0)
T1 = ("orders", 1)
NONE = ErrorCode.none


def states(coord: Coordinator) -> list[tuple[str, str]]:
    """The log as (transactional id, state name or 'tombstone')."""
    return [
        (
            decode_key(key),
            "tombstone"
            if value is None
            else TxnState.from_byte(decode_value(value).state).state_name,
        )
        for key, value in coord.log
    ]


def ongoing(
    coord: Coordinator, txn_id: str = "tx", *partitions: tuple[str, int]
) -> InitProducerIdAnswer:
    producer = coord.init(txn_id)
    assert producer is not None and producer.error is NONE
    assert coord.add(txn_id, producer, *(partitions or (T0, T1))) == dict.fromkeys(
        partitions or (T0, T1), NONE
    )
    return producer


# -- InitProducerId -------------------------------------------------------------


def test_init_gives_a_new_producer_id_then_bumps_its_epoch() -> None:
    coord = Coordinator()
    assert coord.init("tx") == InitProducerIdAnswer(NONE, 1000, 0)
    assert coord.init("tx") == InitProducerIdAnswer(NONE, 1000, 1)
    assert coord.init("other") == InitProducerIdAnswer(NONE, 1001, 0)
    assert states(coord) == [("tx", "Empty"), ("tx", "Empty"), ("other", "Empty")]


@pytest.mark.parametrize(
    ("txn_id", "timeout_ms", "error"),
    [
        ("", 60000, ErrorCode.invalid_request),
        ("tx", 900001, ErrorCode.invalid_transaction_timeout),
        ("tx", 0, ErrorCode.invalid_transaction_timeout),
        ("tx", 900000, NONE),
    ],
)
def test_init_checks_the_id_and_the_timeout(txn_id: str, timeout_ms: int, error: ErrorCode) -> None:
    answer = Coordinator().init(txn_id, timeout_ms)
    assert answer is not None and answer.error is error


def test_a_retried_init_while_the_first_is_written_is_concurrent() -> None:
    coord = Coordinator()
    assert coord.init("tx", durable=False) is None
    answer = coord.init("tx")
    assert answer is not None and answer.error is ErrorCode.concurrent_transactions
    (held,) = coord.held
    assert coord.make_durable(held)[0][1] == InitProducerIdAnswer(NONE, 1000, 0)


def test_a_failed_append_answers_as_kafka_and_changes_nothing() -> None:
    coord = Coordinator()
    producer = coord.init("tx")
    assert producer is not None
    coord.init("tx", durable=False)
    (held,) = coord.held
    ((_, answer),) = coord.fail(held, ErrorCode.not_leader_or_follower)
    assert answer == InitProducerIdAnswer(ErrorCode.not_coordinator)
    assert coord.describe("tx")[0].producer_epoch == 0
    assert coord.init("tx") == InitProducerIdAnswer(NONE, 1000, 1)


def test_kip_360_a_producer_naming_its_epoch_gets_it_bumped_and_a_retry_the_same() -> None:
    coord = Coordinator()
    coord.init("tx")
    assert coord.init("tx", producer_id=1000, producer_epoch=0) == InitProducerIdAnswer(
        NONE, 1000, 1
    )
    # The answer was lost: the retry names the epoch before the bump.
    assert coord.init("tx", producer_id=1000, producer_epoch=0) == InitProducerIdAnswer(
        NONE, 1000, 1
    )
    fenced = coord.init("tx", producer_id=1000, producer_epoch=7)
    assert fenced is not None and fenced.error is ErrorCode.producer_fenced
    other = coord.init("tx", producer_id=55, producer_epoch=1)
    assert other is not None and other.error is ErrorCode.producer_fenced
    old_client = coord.init("tx", producer_id=55, producer_epoch=1, version=3)
    assert old_client is not None and old_client.error is ErrorCode.invalid_producer_epoch


def _exhausted(epoch: int) -> Coordinator:
    value = TransactionLogValue(77, epoch, 60000, TxnState.COMPLETE_COMMIT.byte, frozenset(), 1, 1)
    loaded = Coordinator(log=[(encode_key("tx"), encode_value(value))])
    return loaded.reload()


def test_an_exhausted_epoch_gets_a_new_producer_id() -> None:
    assert _exhausted(MAX_PRODUCER_EPOCH - 1).init("tx") == InitProducerIdAnswer(NONE, 1000, 0)
    coord = _exhausted(MAX_PRODUCER_EPOCH - 1)
    last = MAX_PRODUCER_EPOCH - 1
    assert coord.init("tx", producer_id=77, producer_epoch=last) == (
        InitProducerIdAnswer(NONE, 1000, 0)
    )
    # KIP-360: a retry naming the old id and its last epoch gets the new one again.
    assert coord.init("tx", producer_id=77, producer_epoch=last) == (
        InitProducerIdAnswer(NONE, 1000, 0)
    )
    assert coord.init("tx", producer_id=1000, producer_epoch=0) == (
        InitProducerIdAnswer(NONE, 1000, 1)
    )


def test_init_fences_the_ongoing_transaction_of_the_old_instance() -> None:
    coord = Coordinator()
    old = ongoing(coord)
    answer = coord.init("tx")
    assert answer is not None and answer.error is ErrorCode.concurrent_transactions
    # The old instance is fenced at once.
    assert coord.add("tx", old, ("orders", 2)) == {("orders", 2): ErrorCode.producer_fenced}
    assert coord.end("tx", old, commit=True) is ErrorCode.producer_fenced
    assert coord.end("tx", old, commit=True, version=1) is ErrorCode.invalid_producer_epoch
    (markers,) = coord.take_markers()
    assert (markers.producer_id, markers.producer_epoch, markers.commit) == (1000, 1, False)
    assert markers.partitions == {T0, T1}
    assert markers.coordinator_epoch == 3
    # Until the abort is complete the new instance is told to retry.
    retry = coord.init("tx")
    assert retry is not None and retry.error is ErrorCode.concurrent_transactions
    coord.write_markers(markers)
    assert coord.init("tx") == InitProducerIdAnswer(NONE, 1000, 2)
    assert states(coord)[-3:] == [("tx", "PrepareAbort"), ("tx", "CompleteAbort"), ("tx", "Empty")]


def test_a_fence_whose_record_failed_is_not_bumped_again() -> None:
    coord = Coordinator()
    old = ongoing(coord)
    coord.init("tx", durable=False)
    (held,) = coord.held
    ((_, answer),) = coord.fail(held, ErrorCode.request_timed_out)
    assert answer == InitProducerIdAnswer(ErrorCode.coordinator_not_available)
    assert coord.describe("tx")[0].state == "Ongoing"
    assert coord.end("tx", old, commit=True) is ErrorCode.producer_fenced
    retry = coord.init("tx")
    assert retry is not None and retry.error is ErrorCode.concurrent_transactions
    (markers,) = coord.take_markers()
    assert markers.producer_epoch == old.producer_epoch + 1


# -- AddPartitionsToTxn, AddOffsetsToTxn -----------------------------------------


def test_add_partitions_starts_the_transaction() -> None:
    coord = Coordinator()
    producer = coord.init("tx")
    assert producer is not None
    assert coord.add("tx", producer, T0) == {T0: NONE}
    coord.now += 50
    assert coord.add("tx", producer, T0, T1) == {T0: NONE, T1: NONE}
    (described,) = coord.describe("tx")
    assert (described.state, described.partitions) == ("Ongoing", (T0, T1))
    assert described.start_ms == coord.now - 50
    logged = len(coord.log)
    assert coord.add("tx", producer, T1) == {T1: NONE}
    assert len(coord.log) == logged  # nothing new to store


def test_add_partitions_errors() -> None:
    coord = Coordinator(deleted=frozenset({"gone"}))
    producer = coord.init("tx")
    assert producer is not None
    stale = InitProducerIdAnswer(NONE, producer.producer_id, producer.producer_epoch - 1)
    stranger = InitProducerIdAnswer(NONE, 5, 0)
    assert coord.add("tx", stale, T0) == {T0: ErrorCode.producer_fenced}
    assert coord.add("tx", stale, T0, version=1) == {T0: ErrorCode.invalid_producer_epoch}
    assert coord.add("tx", stranger, T0) == {T0: ErrorCode.invalid_producer_id_mapping}
    assert coord.add("nobody", producer, T0) == {T0: ErrorCode.invalid_producer_id_mapping}
    assert coord.add("", producer, T0) == {T0: ErrorCode.invalid_request}
    assert coord.add("tx", producer, T0, ("gone", 0)) == {
        T0: ErrorCode.operation_not_attempted,
        ("gone", 0): ErrorCode.unknown_topic_or_partition,
    }


def test_add_partitions_while_a_record_is_written_is_concurrent() -> None:
    coord = Coordinator()
    producer = ongoing(coord)
    assert coord.end("tx", producer, commit=True, durable=False) is None
    assert coord.add("tx", producer, T0) == {T0: ErrorCode.concurrent_transactions}
    (held,) = coord.held
    assert coord.take_markers() == []  # not before the PrepareCommit is durable
    assert coord.make_durable(held)[0][1].error is NONE  # type: ignore[union-attr]
    assert len(coord.take_markers()) == 1
    assert coord.add("tx", producer, ("orders", 9)) == {
        ("orders", 9): ErrorCode.concurrent_transactions
    }


def test_verify_only_answers_per_partition_whether_it_is_in_the_transaction() -> None:
    coord = Coordinator()
    producer = ongoing(coord, "tx", T0)
    logged = len(coord.log)
    assert coord.add("tx", producer, T0, T1, verify_only=True) == {
        T0: NONE,
        T1: ErrorCode.transaction_abortable,
    }
    stale = InitProducerIdAnswer(NONE, producer.producer_id, 9)
    assert coord.add("tx", stale, T0, verify_only=True) == {T0: ErrorCode.producer_fenced}
    assert coord.add("who", producer, T0, verify_only=True) == {
        T0: ErrorCode.invalid_producer_id_mapping
    }
    assert len(coord.log) == logged


def test_add_offsets_adds_the_groups_offsets_partition() -> None:
    coord = Coordinator()
    producer = coord.init("tx")
    assert producer is not None
    assert coord.add_offsets("tx", producer, "my-group") is NONE
    offsets = (OFFSETS_TOPIC, partition_for_group("my-group", 50))
    assert coord.describe("tx")[0].partitions == (offsets,)
    stale = InitProducerIdAnswer(NONE, producer.producer_id, 5)
    assert coord.add_offsets("tx", stale, "my-group") is ErrorCode.producer_fenced


# -- EndTxn ------------------------------------------------------------------------


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_prepares_writes_markers_then_completes(commit: bool) -> None:
    coord = Coordinator()
    producer = ongoing(coord)
    assert coord.end("tx", producer, commit) is NONE
    prepared, complete = (
        ("PrepareCommit", "CompleteCommit") if commit else ("PrepareAbort", "CompleteAbort")
    )
    assert coord.describe("tx")[0].state == prepared
    (markers,) = coord.take_markers()
    assert (markers.commit, markers.producer_id, markers.producer_epoch) == (commit, 1000, 0)
    assert markers.partitions == {T0, T1}
    # Retries while the markers are written, then once complete.
    assert coord.end("tx", producer, commit) is ErrorCode.concurrent_transactions
    # Kafka writes the Complete record next, pending: both decisions are told to wait.
    assert coord.end("tx", producer, not commit) is ErrorCode.concurrent_transactions
    coord.write_markers(markers)
    assert states(coord)[-2:] == [("tx", prepared), ("tx", complete)]
    described = coord.describe("tx")[0]
    assert (described.state, described.partitions) == (complete, ())
    assert coord.end("tx", producer, commit) is NONE
    assert coord.end("tx", producer, not commit) is ErrorCode.invalid_txn_state
    # The next transaction starts on the same epoch.
    assert coord.add("tx", producer, T1) == {T1: NONE}


def test_end_txn_errors() -> None:
    coord = Coordinator()
    producer = coord.init("tx")
    assert producer is not None
    assert coord.end("tx", producer, commit=True) is ErrorCode.invalid_txn_state
    assert coord.end("nobody", producer, commit=True) is ErrorCode.invalid_producer_id_mapping
    stale = InitProducerIdAnswer(NONE, 1000, 4)
    assert coord.end("tx", stale, commit=False) is ErrorCode.producer_fenced
    assert coord.end("tx", stale, commit=False, version=0) is ErrorCode.invalid_producer_epoch


def test_markers_that_failed_are_written_again_after_a_backoff() -> None:
    coord = Coordinator()
    producer = ongoing(coord)
    coord.end("tx", producer, commit=True)
    (markers,) = coord.take_markers()
    coord.write_markers(markers, {T1: ErrorCode.not_leader_or_follower})
    assert coord.describe("tx")[0].state == "PrepareCommit"
    coord.advance(99)
    assert coord.take_markers() == []
    coord.advance(1)
    (again,) = coord.take_markers()
    assert again.partitions == {T1}
    coord.write_markers(again)
    assert coord.describe("tx")[0].state == "CompleteCommit"


def test_markers_of_a_deleted_topic_are_given_up() -> None:
    coord = Coordinator()
    producer = coord.init("tx")
    assert producer is not None
    assert coord.add("tx", producer, ("gone", 0), T0) == {("gone", 0): NONE, T0: NONE}
    coord.deleted.add("gone")
    coord.end("tx", producer, commit=False)
    (markers,) = coord.take_markers()
    coord.write_markers(markers, {("gone", 0): ErrorCode.unknown_topic_or_partition})
    assert coord.describe("tx")[0].state == "CompleteAbort"


def test_a_complete_record_that_failed_is_written_again() -> None:
    coord = Coordinator()
    producer = ongoing(coord)
    coord.end("tx", producer, commit=True)
    (markers,) = coord.take_markers()
    result = coord.shard.markers_written(
        "tx", 1000, 0, dict.fromkeys(markers.partitions, NONE), coord.now
    )
    assert result.records
    coord.fail(result, ErrorCode.kafka_storage_error)
    assert coord.describe("tx")[0].state == "PrepareCommit"
    coord.advance(100)
    assert coord.describe("tx")[0].state == "CompleteCommit"


# -- timers --------------------------------------------------------------------------


def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced() -> None:
    coord = Coordinator()
    producer = coord.init("tx", timeout_ms=15000)
    assert producer is not None
    coord.add("tx", producer, T0)
    coord.advance(10000)  # the first check: not timed out yet
    assert coord.take_markers() == []
    coord.advance(10000)
    (markers,) = coord.take_markers()
    assert (markers.commit, markers.producer_epoch, markers.partitions) == (False, 1, {T0})
    assert coord.end("tx", producer, commit=True) is ErrorCode.producer_fenced
    coord.write_markers(markers)
    assert coord.describe("tx")[0].state == "CompleteAbort"
    assert coord.init("tx") == InitProducerIdAnswer(NONE, 1000, 2)


def test_an_idle_transactional_id_expires_with_a_tombstone() -> None:
    config = TransactionConfig()
    coord = Coordinator(config)
    coord.init("idle")
    producer = ongoing(coord, "busy")
    coord.advance(config.id_expiration_ms - config.expiry_check_interval_ms)
    assert coord.describe("idle")[0].error is NONE
    coord.advance(config.expiry_check_interval_ms)
    assert ("idle", "tombstone") in states(coord)
    assert coord.describe("idle")[0].error is ErrorCode.transactional_id_not_found
    # An ongoing transaction was aborted by its timeout, not expired.
    assert coord.describe("busy")[0].error is NONE
    assert coord.reload().describe("idle")[0].error is ErrorCode.transactional_id_not_found
    # The id can be used again, with a new producer id.
    answer = coord.init("idle")
    assert answer is not None and answer.producer_id not in (1000, producer.producer_id)


# -- loading ---------------------------------------------------------------------------


def test_a_reloaded_coordinator_has_every_transaction_and_resends_prepared_markers() -> None:
    coord = Coordinator()
    ongoing(coord, "running")
    prepared = ongoing(coord, "prepared")
    coord.end("prepared", prepared, commit=True)
    done = ongoing(coord, "done")
    coord.end("done", done, commit=False)
    for markers in coord.take_markers():
        if markers.transactional_id == "done":
            coord.write_markers(markers)
    loaded = coord.reload()
    assert [
        (d.transactional_id, d.state) for d in loaded.describe("running", "prepared", "done")
    ] == [
        ("running", "Ongoing"),
        ("prepared", "PrepareCommit"),
        ("done", "CompleteAbort"),
    ]
    (markers,) = loaded.take_markers()
    assert (markers.transactional_id, markers.commit, markers.coordinator_epoch) == (
        "prepared",
        True,
        4,
    )
    assert markers.partitions == {T0, T1}
    loaded.write_markers(markers)
    assert loaded.describe("prepared")[0].state == "CompleteCommit"
    assert loaded.end("prepared", prepared, commit=True) is NONE


def test_a_loading_coordinator_answers_load_in_progress() -> None:
    coord = Coordinator()
    coord.shard.begin_load()
    answer = coord.init("tx")
    assert answer is not None and answer.error is ErrorCode.coordinator_load_in_progress
    assert coord.describe("tx")[0].error is ErrorCode.coordinator_load_in_progress
    assert coord.list().error is ErrorCode.coordinator_load_in_progress


# -- DescribeTransactions, ListTransactions ---------------------------------------------


def test_describe_transactions() -> None:
    coord = Coordinator()
    producer = coord.init("tx", timeout_ms=30000)
    assert producer is not None
    coord.add("tx", producer, T1, T0)
    known, unknown = coord.describe("tx", "nobody")
    assert (known.error, known.state, known.timeout_ms, known.start_ms) == (
        NONE,
        "Ongoing",
        30000,
        coord.now,
    )
    assert (known.producer_id, known.producer_epoch, known.partitions) == (1000, 0, (T0, T1))
    assert unknown.error is ErrorCode.transactional_id_not_found


def test_list_transactions_filters() -> None:
    coord = Coordinator()
    coord.init("empty")
    ongoing(coord, "old")
    coord.now += 5000
    ongoing(coord, "new")

    def listed(**filters: object) -> list[str]:
        answer = coord.list(**filters)
        assert answer.error is NONE
        return sorted(t.transactional_id for t in answer.transactions)

    assert listed() == ["empty", "new", "old"]
    assert listed(states=("Ongoing",)) == ["new", "old"]
    assert listed(producer_ids=(1000,)) == ["empty"]
    assert listed(duration_ms=4999) == ["empty", "old"]  # Empty has no start
    assert listed(states=("Ongoing",), duration_ms=5000) == []
    assert listed(transactional_id_pattern="n.*") == ["new"]
    assert listed(transactional_id_pattern="e") == []
    answer = coord.list(states=("Ongoing", "Sleeping"))
    assert answer.unknown_state_filters == ("Sleeping",)
    assert coord.list(transactional_id_pattern="(").error is ErrorCode.invalid_regular_expression


def test_end_txn_answers_the_producer_id_and_epoch_it_ended() -> None:
    coord = Coordinator()
    producer = ongoing(coord)
    req = EndTxn("tx", producer.producer_id, producer.producer_epoch, True)
    answer = coord.answer(coord.shard.end_txn(req, coord.ctx(5), coord.now))
    assert answer == EndTxnAnswer(NONE, 1000, 0)
    coord.complete_markers()
    # A retry of a completed EndTxn names it too; an error names no producer.
    retried = coord.answer(coord.shard.end_txn(req, coord.ctx(5), coord.now))
    assert retried == EndTxnAnswer(NONE, 1000, 0)
    other = EndTxn("tx", producer.producer_id, producer.producer_epoch, False)
    assert coord.answer(coord.shard.end_txn(other, coord.ctx(5), coord.now)) == EndTxnAnswer(
        ErrorCode.invalid_txn_state
    )


@pytest.mark.parametrize(
    "error", [ErrorCode.unsupported_for_message_format, ErrorCode.unsupported_version]
)
def test_a_partition_that_cannot_take_markers_is_given_up(error: ErrorCode) -> None:
    coord = Coordinator()
    producer = ongoing(coord)
    coord.end("tx", producer, commit=True)
    (markers,) = coord.take_markers()
    coord.write_markers(markers, {T1: error})
    assert coord.describe("tx")[0].state == "CompleteCommit"


def test_unknown_partitions_are_refused_before_anything_else_also_in_verification() -> None:
    coord = Coordinator(deleted=frozenset({"gone"}))
    producer = ongoing(coord, "tx", T0)
    assert coord.add("tx", producer, T0, ("gone", 1), verify_only=True) == {
        T0: ErrorCode.operation_not_attempted,
        ("gone", 1): ErrorCode.unknown_topic_or_partition,
    }
    assert coord.add("", producer, ("gone", 1)) == {
        ("gone", 1): ErrorCode.unknown_topic_or_partition
    }


def test_describe_refuses_an_empty_id_and_answers_errors_with_kafkas_zero_fields() -> None:
    coord = Coordinator()
    empty, unknown = coord.describe("", "nobody")
    assert empty.error is ErrorCode.invalid_request
    assert unknown.error is ErrorCode.transactional_id_not_found
    assert (unknown.producer_id, unknown.producer_epoch, unknown.start_ms) == (0, 0, 0)
    assert (unknown.state, unknown.timeout_ms, unknown.partitions) == ("", 0, ())


@pytest.mark.parametrize(("producer_id", "producer_epoch"), [(-1, 0), (1000, -1)])
def test_init_naming_half_a_producer_is_invalid(producer_id: int, producer_epoch: int) -> None:
    coord = Coordinator()
    coord.init("tx")
    answer = coord.init("tx", producer_id=producer_id, producer_epoch=producer_epoch)
    assert answer == InitProducerIdAnswer(ErrorCode.invalid_request)
