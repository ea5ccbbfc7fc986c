"""What ``__share_group_state`` keeps of a share partition: Kafka's
ShareSnapshot layout, and a partition restored from it."""

from __future__ import annotations

import uuid

from kgroups.share_partitions import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRange,
    RecordState,
    SharePartition,
    SharePartitionConfig,
)
from kgroups.share_partitions.persisted import restored, state_batches
from kgroups.share_partitions.state_records import (
    SHARE_SNAPSHOT,
    ShareSnapshotValue,
    ShareStateKey,
    StateBatch,
    decode_key,
    decode_snapshot,
    encode_key,
    encode_snapshot,
)
from kgroups.topics.placement import partition_for_share_key

CONFIG = SharePartitionConfig()


def test_a_snapshot_record_round_trips() -> None:
    key = ShareStateKey(SHARE_SNAPSHOT, "g", uuid.UUID(int=7), 3)
    raw_key = encode_key(key)
    assert raw_key[:2] == b"\x00\x00"  # record type 0: ShareSnapshot
    assert decode_key(raw_key) == key
    value = ShareSnapshotValue(4, 0, 1, 10, 111, 222, (StateBatch(10, 12, 2, 1),))
    assert decode_snapshot(encode_snapshot(value)) == value


def test_the_state_partition_follows_kafkas_key() -> None:
    topic = uuid.UUID("00000000-0000-0000-0000-000000000001")
    placed = {partition_for_share_key("g", topic, p, 50) for p in range(20)}
    assert all(0 <= p < 50 for p in placed) and len(placed) > 1


def test_state_batches_merge_and_keep_acquired_records_available() -> None:
    sp = SharePartition(CONFIG, 0)
    sp.acquire("m", [(0, 4), (5, 9)], 0, 500)
    accept, release = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE
    sp.acknowledge("m", [AcknowledgementBatch(2, 3, (accept,))], 0)
    sp.acknowledge("m", [AcknowledgementBatch(4, 4, (release,))], 0)
    assert state_batches(sp) == (
        StateBatch(0, 1, int(RecordState.AVAILABLE), 1),
        StateBatch(2, 3, int(RecordState.ACKNOWLEDGED), 1),
        StateBatch(4, 9, int(RecordState.AVAILABLE), 1),
    )


def test_a_restored_partition_redelivers_what_was_not_done() -> None:
    batches = (
        StateBatch(5, 6, int(RecordState.ACKNOWLEDGED), 1),
        StateBatch(7, 7, int(RecordState.AVAILABLE), 2),
        StateBatch(10, 11, int(RecordState.ARCHIVED), 5),
    )
    sp = restored(CONFIG, 5, batches)
    assert sp.start_offset == 7
    assert sp.end_offset == 12
    # 8 and 9 were named by no batch: not delivered yet.
    got = sp.acquire("m", [(5, 9), (10, 14)], 0, 500)
    assert got == [AcquiredRange(7, 7, 3), AcquiredRange(8, 9, 1), AcquiredRange(12, 14, 1)]
