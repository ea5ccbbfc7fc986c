"""A busy ``__consumer_offsets`` partition compacts to its live keys, so loading it after
a restart reads a handful of records instead of every commit ever made."""

from __future__ import annotations

from pathlib import Path

from compaction_helpers import HOUR, all_records
from storage_helpers import NOW

from kgroups.coordinator.records import (
    GroupMetadataValue,
    OffsetCommitValue,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from kgroups.partitions.config import LogConfig
from kgroups.records.batch import encode_batch
from kgroups.storage.cleanable import plan_cleaning
from kgroups.storage.cleaner import LogCleaner
from kgroups.storage.log import SegmentLog

PARTITIONS = 10
COMMITS = 20_000  # each commits all 10 partitions: 200,000 offset records
CONFIG = LogConfig(
    cleanup_policy="compact",
    segment_bytes=128 * 1024,
    segment_ms=HOUR,
    index_interval_bytes=4096,
)


def test_200000_offset_commits_compact_to_the_live_keys(tmp_path: Path) -> None:
    d = tmp_path / "__consumer_offsets-7"
    plog = SegmentLog.open(d, CONFIG, NOW)
    keys = [encode_offset_commit_key("group", "orders", p) for p in range(PARTITIONS)]
    for n in range(COMMITS):
        value = encode_offset_commit_value(OffsetCommitValue(n, "", NOW + n))
        plog.append_batch(encode_batch([(key, value, (), NOW + n) for key in keys]), NOW)
    # The group's metadata, written after a later rebalance, starts a new segment.
    metadata_key = encode_group_metadata_key("group")
    metadata = encode_group_metadata_value(
        GroupMetadataValue("consumer", 5, "range", None, NOW + 2 * HOUR, ())
    )
    plog.append_records([(metadata_key, metadata, (), NOW + 2 * HOUR)], NOW)
    segments_before = len(plog.segments)
    bytes_before = plog.size
    assert segments_before > 50

    plan = plan_cleaning(plog, NOW + 2 * HOUR)
    assert plan is not None
    result = LogCleaner().clean(plan)
    assert result.commit()
    result.remove_replaced_files()
    assert result.stats.records_read == COMMITS * PARTITIONS
    assert result.stats.records_kept == PARTITIONS
    assert len(plog.segments) == 2
    assert plog.size < bytes_before // 1000
    plog.close()

    # What a coordinator load reads after a restart: the live keys and nothing else.
    plog = SegmentLog.open(d, CONFIG, NOW, recover=False)
    records = all_records(plog)
    assert len(records) == PARTITIONS + 1
    latest = {r.key: decode_offset_commit_value(r.value) for r in records[:-1] if r.value}
    assert latest == {key: OffsetCommitValue(COMMITS - 1, "", NOW + COMMITS - 1) for key in keys}
    assert [r.offset for r in records[:-1]] == list(
        range((COMMITS - 1) * PARTITIONS, COMMITS * PARTITIONS)
    )
    assert (records[-1].key, records[-1].value) == (metadata_key, metadata)
    assert (plog.log_start_offset, plog.log_end_offset) == (0, COMMITS * PARTITIONS + 1)
    plog.close()
