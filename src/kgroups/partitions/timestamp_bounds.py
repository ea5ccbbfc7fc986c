"""``message.timestamp.before.max.ms`` and ``message.timestamp.after.max.ms``
(KIP-937): on a CreateTime topic, a record whose timestamp lies further in
the past or the future than these allow fails its batch with
INVALID_TIMESTAMP, as Kafka's LogValidator answers, each such record named in
the response's record errors. A record without a
timestamp (-1) passes. Both default to unbounded, and then nothing here runs.
"""

from __future__ import annotations

from kgroups.errors import ErrorCode, RecordsRejected
from kgroups.records.batch import BatchHeader, records_section
from kgroups.records.scan import scan_records

__all__ = ["check_timestamps"]

NO_TIMESTAMP = -1


def check_timestamps(
    payload: bytes | bytearray | memoryview,
    batches: list[tuple[int, BatchHeader]],
    now_ms: int,
    *,
    before_max_ms: int,
    after_max_ms: int,
) -> None:
    low = now_ms - before_max_ms
    high = now_ms + after_max_ms
    with memoryview(payload) as view:
        for pos, header in batches:
            section = records_section(view[pos : pos + header.size], header)
            base = header.base_timestamp
            records = scan_records(section, header.records_count, bodies=False)
            rejected = [
                (index, f"timestamp {timestamp} is out of range [{low}, {high}]")
                for index, record in enumerate(records)
                if (timestamp := base + record[3]) != NO_TIMESTAMP and not low <= timestamp <= high
            ]
            if rejected:
                raise RecordsRejected(ErrorCode.invalid_timestamp, rejected)
