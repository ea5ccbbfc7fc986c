"""message.timestamp.before.max.ms / after.max.ms on a CreateTime topic."""

from __future__ import annotations

import pytest

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.batch_validation import validate_batches
from kgroups.partitions.config import LogConfig
from kgroups.partitions.timestamp_bounds import check_timestamps
from kgroups.records.batch import encode_batch
from kgroups.records.compression import LZ4

NOW = 1_700_000_000_000


def _check(timestamps: list[int], before: int, after: int, compression: int = 0) -> None:
    payload = encode_batch([(b"k", b"v", [], ts) for ts in timestamps], compression=compression)
    batches = validate_batches(payload, max_message_bytes=1 << 20, segment_bytes=1 << 30)
    check_timestamps(payload, batches, NOW, before_max_ms=before, after_max_ms=after)


def test_records_within_the_bounds_pass() -> None:
    _check([NOW - 1000, NOW, NOW + 1000, -1], before=1000, after=1000)


@pytest.mark.parametrize("compression", [0, LZ4])
@pytest.mark.parametrize("late", [NOW - 1001, NOW + 1001])
def test_a_record_out_of_bounds_is_invalid_timestamp(late: int, compression: int) -> None:
    # The offending record is not the first: every record is checked.
    with pytest.raises(KafkaError) as exc:
        _check([NOW, late, NOW], before=1000, after=1000, compression=compression)
    assert exc.value.error_code == ErrorCode.invalid_timestamp
    assert str(late) in str(exc.value)


def test_only_create_time_topics_with_a_bound_are_checked() -> None:
    assert not LogConfig().timestamps_bounded
    assert LogConfig().with_overrides({"message.timestamp.after.max.ms": "5"}).timestamps_bounded
    assert not (
        LogConfig()
        .with_overrides(
            {"message.timestamp.before.max.ms": "5", "message.timestamp.type": "LogAppendTime"}
        )
        .timestamps_bounded
    )
