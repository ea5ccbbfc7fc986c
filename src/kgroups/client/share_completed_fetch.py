"""One partition's share of a ShareFetch answer, turned into records.

The broker sends whole record batches as stored, and the ranges of offsets it
acquired for this member, each with its delivery count. The batches are
decoded as a plain fetch's (CompletedFetch: CRCs checked, transaction markers
withheld); a record outside the acquired ranges is not this member's and is
dropped, and an acquired offset that holds no record (compacted away) is
acknowledged as a GAP, as Kafka's client does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgroups.client.completed_fetch import CompletedFetch
from kgroups.client.consumer_record import TopicPartition
from kgroups.client.share_record import ShareConsumerRecord

__all__ = ["acquired_records"]

_ALL = 2**31 - 1


def acquired_records(
    tp: TopicPartition, data: bytes | None, acquired: Sequence[Any], *, check_crcs: bool
) -> tuple[list[ShareConsumerRecord], list[int]]:
    """The acquired records, in offset order, and the acquired offsets with no record."""
    if not acquired:
        return [], []
    ranges = sorted(
        (int(a.first_offset), int(a.last_offset), int(a.delivery_count)) for a in acquired
    )
    start = ranges[0][0]
    fetch = CompletedFetch(tp, data or b"", fetch_offset=start, epoch=0, check_crcs=check_crcs)
    decoded, _ = fetch.take(start, _ALL)
    by_offset = {r.offset: r for r in decoded}
    records: list[ShareConsumerRecord] = []
    gaps: list[int] = []
    for first, last, count in ranges:
        for offset in range(first, last + 1):
            record = by_offset.get(offset)
            if record is None:
                gaps.append(offset)
            else:
                records.append(ShareConsumerRecord.of(record, count))
    return records, gaps
