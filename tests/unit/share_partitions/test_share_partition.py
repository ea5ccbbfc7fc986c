"""A share partition's rules, as Kafka's SharePartitionTest states them:
acquisition, acknowledgement, lock timeouts, delivery counts, the start
offset and the record lock limit."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.clock import ManualClock
from kgroups.share_partitions import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRange,
    RecordState,
    SharePartition,
    SharePartitionConfig,
)

ACCEPT = AcknowledgeType.ACCEPT
RELEASE = AcknowledgeType.RELEASE
REJECT = AcknowledgeType.REJECT
GAP = AcknowledgeType.GAP
RENEW = AcknowledgeType.RENEW
LOCK_MS = 30_000


def partition(start: int = 0, **settings: int) -> SharePartition:
    return SharePartition(SharePartitionConfig(**settings), start)


def ack(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, tuple(types))


def test_defaults_are_kafkas() -> None:
    config = SharePartitionConfig()
    assert config.record_lock_duration_ms == 30_000
    assert config.delivery_count_limit == 5
    assert config.max_record_locks == 2000


def test_new_records_are_acquired_with_a_first_delivery() -> None:
    clock = ManualClock()
    sp = partition()
    got = sp.acquire("m1", [(0, 4), (5, 9)], clock.now_ms(), max_records=500)
    assert got == [AcquiredRange(0, 9, 1)]
    assert sp.end_offset == 10
    assert sp.next_fetch_offset() == 10
    record = sp.record(3)
    assert record is not None
    assert record.state is RecordState.ACQUIRED
    assert record.member_id == "m1"
    assert record.lock_deadline_ms == clock.now_ms() + LOCK_MS


def test_acquired_records_are_not_acquired_again() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 4)], 0, 500)
    assert sp.acquire("m2", [(0, 4)], 0, 500) == []


def test_batches_before_the_start_offset_are_skipped() -> None:
    sp = partition(start=10)
    assert sp.acquire("m1", [(0, 4), (5, 14)], 0, 500) == [AcquiredRange(10, 14, 1)]


def test_accept_moves_the_start_offset() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 4)], 0, 500)
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT)], 0) is ErrorCode.none
    assert sp.start_offset == 5
    assert sp.batches() == []
    assert sp.in_flight_count() == 0


def test_a_gap_in_acknowledgements_holds_the_start_offset() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 4), (5, 9)], 0, 500)
    assert sp.acknowledge("m1", [ack(5, 9, ACCEPT)], 0) is ErrorCode.none
    assert sp.start_offset == 0
    assert sp.acknowledge("m1", [ack(0, 2, ACCEPT)], 0) is ErrorCode.none
    assert sp.start_offset == 3  # offsets 3 and 4 are still acquired
    assert sp.acknowledge("m1", [ack(3, 4, REJECT)], 0) is ErrorCode.none
    assert sp.start_offset == 10


def test_per_offset_acknowledgement_types() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 4)], 0, 500)
    types = (ACCEPT, RELEASE, REJECT, GAP, ACCEPT)
    assert sp.acknowledge("m1", [ack(0, 4, *types)], 0) is ErrorCode.none
    assert sp.start_offset == 1
    states = [sp.record(o) for o in range(1, 5)]
    assert [s.state if s else None for s in states] == [
        RecordState.AVAILABLE,
        RecordState.ARCHIVED,
        RecordState.ARCHIVED,
        RecordState.ACKNOWLEDGED,
    ]
    assert sp.next_fetch_offset() == 1


def test_released_records_are_redelivered_with_a_higher_count() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 9)], 0, 500)
    sp.acknowledge("m1", [ack(2, 3, RELEASE)], 0)
    assert sp.next_fetch_offset() == 2
    # The fetch reads the whole log batch again: only the released offsets
    # are handed out.
    assert sp.acquire("m2", [(0, 9)], 0, 500) == [AcquiredRange(2, 3, 2)]
    record = sp.record(2)
    assert record is not None and record.member_id == "m2"


def test_a_whole_released_batch_is_reacquired_as_one() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 4), (5, 9)], 0, 500)
    sp.acknowledge("m1", [ack(0, 4, RELEASE)], 0)
    assert sp.acquire("m2", [(0, 4), (5, 9)], 0, 500) == [AcquiredRange(0, 4, 2)]
    assert sp.batches()[0].whole is not None  # still moving as one


def test_only_the_holder_may_acknowledge() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 4)], 0, 500)
    assert sp.acknowledge("m2", [ack(0, 4, ACCEPT)], 0) is ErrorCode.invalid_record_state
    record = sp.record(0)
    assert record is not None and record.state is RecordState.ACQUIRED


def test_acknowledging_a_record_not_acquired_is_refused() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 4)], 0, 500)
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT)], 0) is ErrorCode.none
    sp.acquire("m1", [(5, 9)], 0, 500)
    sp.acknowledge("m1", [ack(6, 6, RELEASE)], 0)
    assert sp.acknowledge("m1", [ack(6, 6, ACCEPT)], 0) is ErrorCode.invalid_record_state
    # Past the end offset: never fetched.
    assert sp.acknowledge("m1", [ack(20, 25, ACCEPT)], 0) is ErrorCode.invalid_record_state


def test_acknowledgements_before_the_start_offset_are_ignored() -> None:
    sp = partition(start=10)
    assert sp.acknowledge("m1", [ack(0, 5, ACCEPT)], 0) is ErrorCode.none


def test_one_bad_range_refuses_the_whole_call() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 4), (5, 9)], 0, 500)
    sp.acknowledge("m1", [ack(7, 7, RELEASE)], 0)
    error = sp.acknowledge("m1", [ack(0, 4, ACCEPT), ack(5, 9, ACCEPT)], 0)
    assert error is ErrorCode.invalid_record_state
    assert sp.start_offset == 0
    record = sp.record(0)
    assert record is not None and record.state is RecordState.ACQUIRED


def test_malformed_acknowledgements_are_invalid_requests() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 4)], 0, 500)
    assert sp.acknowledge("m1", [ack(4, 0, ACCEPT)], 0) is ErrorCode.invalid_request
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT, REJECT)], 0) is ErrorCode.invalid_request
    assert sp.acknowledge("m1", [ack(0, 4, 9)], 0) is ErrorCode.invalid_request
    assert sp.acknowledge("m1", [ack(0, 4)], 0) is ErrorCode.invalid_request


def test_lock_timeout_makes_records_available_again() -> None:
    clock = ManualClock()
    sp = partition()
    sp.acquire("m1", [(0, 4)], clock.now_ms(), 500)
    assert sp.next_deadline() == clock.now_ms() + LOCK_MS
    clock.advance(LOCK_MS - 1)
    assert not sp.expire(clock.now_ms())
    clock.advance(1)
    assert sp.expire(clock.now_ms())
    record = sp.record(0)
    assert record is not None and record.state is RecordState.AVAILABLE
    assert record.member_id is None and record.delivery_count == 1
    assert sp.next_deadline() is None
    # The holder's late acknowledgement is refused.
    assert sp.acknowledge("m1", [ack(0, 4, ACCEPT)], clock.now_ms()) is (
        ErrorCode.invalid_record_state
    )


def test_the_lock_duration_is_configurable() -> None:
    sp = partition(record_lock_duration_ms=1000)
    sp.acquire("m1", [(0, 0)], 0, 500)
    assert sp.expire(1000)


def test_renew_restarts_the_lock() -> None:
    clock = ManualClock()
    sp = partition()
    sp.acquire("m1", [(0, 4)], clock.now_ms(), 500)
    clock.advance(20_000)
    assert sp.acknowledge("m1", [ack(0, 4, RENEW)], clock.now_ms()) is ErrorCode.none
    clock.advance(20_000)
    assert not sp.expire(clock.now_ms())
    record = sp.record(0)
    assert record is not None and record.state is RecordState.ACQUIRED
    assert record.delivery_count == 1


def test_renew_may_be_refused() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 4)], 0, 500)
    error = sp.acknowledge("m1", [ack(0, 4, RENEW)], 0, renew_allowed=False)
    assert error is ErrorCode.invalid_request


def test_a_record_is_archived_after_its_last_delivery() -> None:
    clock = ManualClock()
    sp = partition(delivery_count_limit=2)
    sp.acquire("m1", [(0, 4)], clock.now_ms(), 500)
    sp.acknowledge("m1", [ack(0, 4, RELEASE)], clock.now_ms())
    assert sp.acquire("m1", [(0, 4)], clock.now_ms(), 500) == [AcquiredRange(0, 4, 2)]
    clock.advance(LOCK_MS)
    sp.expire(clock.now_ms())  # the second delivery timed out: no third
    assert sp.start_offset == 5
    assert sp.acquire("m1", [(0, 4)], clock.now_ms(), 500) == []


def test_default_limit_gives_five_deliveries() -> None:
    sp = partition()
    counts = []
    for _ in range(6):
        got = sp.acquire("m1", [(0, 0)], 0, 500)
        counts += [r.delivery_count for r in got]
        sp.acknowledge("m1", [ack(0, 0, RELEASE)], 0)
    assert counts == [1, 2, 3, 4, 5]
    assert sp.start_offset == 1


def test_leaving_member_releases_its_records() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 4)], 0, 500)
    sp.acquire("m2", [(5, 9)], 0, 500)
    assert sp.release_member("m1")
    assert sp.next_fetch_offset() == 0
    assert sp.acquire("m2", [(0, 4)], 0, 500) == [AcquiredRange(0, 4, 2)]
    assert not sp.release_member("m3")


def test_max_records_stops_at_a_batch_boundary() -> None:
    sp = partition()
    got = sp.acquire("m1", [(0, 4), (5, 9), (10, 14)], 0, max_records=7)
    assert got == [AcquiredRange(0, 9, 1)]  # whole batches: 10 records
    assert sp.end_offset == 10


def test_record_limit_mode_cuts_batches() -> None:
    sp = partition()
    got = sp.acquire("m1", [(0, 4), (5, 9)], 0, max_records=7, record_limit=True)
    assert got == [AcquiredRange(0, 6, 1)]
    assert sp.end_offset == 7


def test_max_record_locks_stops_new_acquisitions() -> None:
    sp = partition(max_record_locks=100)
    sp.acquire("m1", [(0, 99)], 0, 500)
    assert not sp.can_acquire()
    assert sp.acquire("m2", [(100, 109)], 0, 500) == []
    sp.acknowledge("m1", [ack(0, 9, ACCEPT)], 0)
    assert sp.can_acquire()
    assert sp.acquire("m2", [(100, 109)], 0, 500) == [AcquiredRange(100, 109, 1)]


def test_available_records_are_acquirable_at_the_lock_limit() -> None:
    sp = partition(max_record_locks=100)
    sp.acquire("m1", [(0, 99)], 0, 500)
    sp.acknowledge("m1", [ack(50, 50, RELEASE)], 0)
    assert sp.can_acquire()
    assert sp.acquire("m2", [(0, 99)], 0, 500) == [AcquiredRange(50, 50, 2)]


def test_offsets_missing_from_the_log_do_not_hold_the_start_offset() -> None:
    # Compaction removed 5..9: the next batch starts at 10.
    sp = partition()
    sp.acquire("m1", [(0, 4), (10, 14)], 0, 500)
    sp.acknowledge("m1", [ack(0, 4, ACCEPT), ack(10, 14, ACCEPT)], 0)
    assert sp.start_offset == 15


def test_log_start_moving_past_the_start_offset() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 9)], 0, 500)
    sp.move_start(5)
    assert sp.start_offset == 5
    sp.move_start(20)
    assert sp.start_offset == 20 and sp.end_offset == 20 and sp.batches() == []


def test_passed_over_batches_are_archived_not_handed_out() -> None:
    sp = partition()
    # A transaction marker at offset 5 between two batches.
    got = sp.acquire("m1", [(0, 4), (5, 5), (6, 9)], 0, 500, passed_over={5})
    assert got == [AcquiredRange(0, 4, 1), AcquiredRange(6, 9, 1)]
    marker = sp.record(5)
    assert marker is not None and marker.state is RecordState.ARCHIVED
    sp.acknowledge("m1", [ack(0, 4, ACCEPT), ack(6, 9, ACCEPT)], 0)
    assert sp.start_offset == 10


def test_records_after_a_moved_log_start_are_still_offered() -> None:
    sp = partition()
    sp.acquire("m1", [(0, 9)], 0, 500)
    sp.acknowledge("m1", [ack(0, 9, RELEASE)], 0)
    sp.move_start(4)  # retention took 0..3 out of the middle of the batch
    assert sp.next_fetch_offset() == 4
    assert sp.acquire("m2", [(0, 9)], 0, 500) == [AcquiredRange(4, 9, 2)]
