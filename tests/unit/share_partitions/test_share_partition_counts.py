"""The counts a share partition keeps as its records move, which the metrics
endpoint and DescribeShareGroupOffsets read: acquired records by delivery,
lock timeouts, archived records by reason, and the records done that the
lag leaves out. Time is a ManualClock's."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.clock import ManualClock
from kgroups.share_partitions import (
    AcknowledgementBatch,
    AcknowledgeType,
    RecordState,
    SharePartition,
    SharePartitionConfig,
)
from kgroups.share_partitions.persisted import restored
from kgroups.share_partitions.state_records import StateBatch

LOCK_MS = 30_000


def partition(**settings: int) -> SharePartition:
    return SharePartition(SharePartitionConfig(**settings), 0)


def ack(first: int, last: int, kind: AcknowledgeType) -> list[AcknowledgementBatch]:
    return [AcknowledgementBatch(first, last, (kind,))]


def lag(sp: SharePartition, high_watermark: int) -> int:
    return high_watermark - sp.start_offset - sp.tally.delivery_complete


def test_acquired_records_are_counted_by_their_delivery() -> None:
    clock = ManualClock()
    sp = partition()
    sp.acquire("m1", [(0, 9)], clock.now_ms(), 500)
    assert sp.tally.acquired == 10
    assert sp.tally.acquired_by_delivery == {1: 10}
    assert lag(sp, high_watermark=15) == 15  # acquired records are not done yet


def test_a_lock_running_out_counts_each_record_once() -> None:
    clock = ManualClock()
    sp = partition()
    sp.acquire("m1", [(0, 9)], clock.now_ms(), 500)
    clock.advance(LOCK_MS - 1)
    assert not sp.expire(clock.now_ms())
    assert sp.tally.lock_timeouts == 0
    clock.advance(1)
    assert sp.expire(clock.now_ms())
    assert not sp.expire(clock.now_ms())  # the same locks do not run out twice
    assert sp.tally.lock_timeouts == 10
    assert sp.tally.acquired == 0 and sp.tally.acquired_by_delivery == {}


def test_records_delivered_again_are_counted_at_their_new_delivery() -> None:
    clock = ManualClock()
    sp = partition()
    sp.acquire("m1", [(0, 9)], clock.now_ms(), 500)
    clock.advance(LOCK_MS)
    sp.expire(clock.now_ms())
    sp.acquire("m2", [(0, 9)], clock.now_ms(), 4, record_limit=True)
    assert sp.tally.acquired_by_delivery == {2: 4}
    assert sp.acknowledge("m2", ack(0, 1, AcknowledgeType.RELEASE), clock.now_ms()) is (
        ErrorCode.none
    )
    sp.acquire("m3", [(0, 9)], clock.now_ms(), 500)
    assert sp.tally.acquired_by_delivery == {3: 2, 2: 8}
    assert sp.tally.acquired == 10
    assert sp.tally.lock_timeouts == 10  # a RELEASE is not a lock timeout


def test_a_renewed_lock_does_not_run_out() -> None:
    clock = ManualClock()
    sp = partition()
    sp.acquire("m1", [(0, 4)], clock.now_ms(), 500)
    clock.advance(20_000)
    sp.acknowledge("m1", ack(0, 4, AcknowledgeType.RENEW), clock.now_ms())
    clock.advance(20_000)
    assert not sp.expire(clock.now_ms())
    assert sp.tally.lock_timeouts == 0 and sp.tally.acquired == 5
    clock.advance(10_000)
    assert sp.expire(clock.now_ms())
    assert sp.tally.lock_timeouts == 5


def test_the_last_delivery_running_out_archives_at_the_limit() -> None:
    clock = ManualClock()
    sp = partition(delivery_count_limit=2)
    for _ in range(2):
        sp.acquire("m1", [(0, 4)], clock.now_ms(), 500)
        clock.advance(LOCK_MS)
        sp.expire(clock.now_ms())
    assert sp.record(0) is None  # archived, and the start offset moved past
    assert sp.tally.lock_timeouts == 10
    assert sp.tally.archived == {"delivery_count_limit": 5, "rejected": 0, "gap": 0}
    assert sp.start_offset == 5 and lag(sp, high_watermark=5) == 0


def test_a_release_or_a_member_gone_at_the_limit_archives_too() -> None:
    clock = ManualClock()
    sp = partition(delivery_count_limit=1)
    sp.acquire("m1", [(0, 4)], clock.now_ms(), 500)
    sp.acknowledge("m1", ack(0, 1, AcknowledgeType.RELEASE), clock.now_ms())
    sp.release_member("m1")
    assert sp.tally.archived["delivery_count_limit"] == 5
    assert sp.tally.lock_timeouts == 0


def test_rejected_and_gap_records_are_archived_by_reason() -> None:
    clock = ManualClock()
    sp = partition()
    sp.acquire("m1", [(0, 9)], clock.now_ms(), 500)
    sp.acknowledge("m1", ack(2, 4, AcknowledgeType.REJECT), clock.now_ms())
    sp.acknowledge("m1", ack(5, 5, AcknowledgeType.GAP), clock.now_ms())
    sp.acknowledge("m1", ack(6, 9, AcknowledgeType.ACCEPT), clock.now_ms())
    assert sp.tally.archived == {"delivery_count_limit": 0, "rejected": 3, "gap": 1}
    # 0 and 1 are still acquired, so the start offset stays; 2..9 are done.
    assert sp.start_offset == 0
    assert sp.tally.acquired_by_delivery == {1: 2}
    assert sp.tally.delivery_complete == 8
    assert lag(sp, high_watermark=12) == 4  # 0, 1 and the two not fetched yet


def test_records_done_leave_the_count_when_the_start_offset_passes_them() -> None:
    clock = ManualClock()
    sp = partition()
    sp.acquire("m1", [(0, 9)], clock.now_ms(), 500)
    sp.acknowledge("m1", ack(5, 9, AcknowledgeType.ACCEPT), clock.now_ms())
    assert sp.tally.delivery_complete == 5
    sp.acknowledge("m1", ack(0, 4, AcknowledgeType.ACCEPT), clock.now_ms())
    assert sp.start_offset == 10 and sp.tally.delivery_complete == 0
    assert sp.batch_count() == 0 and lag(sp, high_watermark=10) == 0


def test_a_restored_partition_counts_its_stored_records() -> None:
    acked, available, archived = (
        RecordState.ACKNOWLEDGED,
        RecordState.AVAILABLE,
        RecordState.ARCHIVED,
    )
    sp = restored(
        SharePartitionConfig(),
        0,
        [
            StateBatch(0, 4, acked, 1),
            StateBatch(5, 9, available, 2),
            StateBatch(10, 12, archived, 5),
        ],
    )
    assert sp.start_offset == 5
    assert sp.tally.acquired == 0
    assert sp.tally.delivery_complete == 3
    assert lag(sp, high_watermark=20) == 12


def test_records_before_a_new_log_start_are_no_longer_counted() -> None:
    clock = ManualClock()
    sp = partition()
    sp.acquire("m1", [(0, 9)], clock.now_ms(), 500)
    sp.move_start(4)  # retention or DeleteRecords
    assert sp.tally.acquired == 6 and sp.tally.acquired_by_delivery == {1: 6}
    clock.advance(LOCK_MS)
    sp.expire(clock.now_ms())
    assert sp.tally.lock_timeouts == 6


def test_records_the_log_start_passed_are_not_counted_when_their_member_goes() -> None:
    # Offsets 0-1 are on their second delivery when DeleteRecords moves the log
    # start past them; the member holding them, and 2-5, then leaves.
    sp = partition()
    sp.acquire("m1", [(0, 5)], 0, 500)
    release = AcknowledgeType.RELEASE
    assert sp.acknowledge("m1", [AcknowledgementBatch(0, 1, (release, release))], 0).value == 0
    sp.acquire("m1", [(0, 5)], 0, 500)
    sp.move_start(2)
    assert (sp.tally.acquired, sp.tally.acquired_by_delivery) == (4, {1: 4})
    assert sp.release_member("m1")
    assert (sp.tally.acquired, sp.tally.acquired_by_delivery) == (0, {})
    assert sp.next_fetch_offset() == 2
