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
_new = tuple.__new__


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
    records: list[ShareConsumerRecord] = []
    gaps: list[int] = []
    i = 0
    for first, last, count in ranges:
        # Both are in offset order: walk the records once.
        while i < len(decoded) and decoded[i].offset < first:
            i += 1
        found = i
        while i < len(decoded) and decoded[i].offset <= last:
            records.append(_new(ShareConsumerRecord, (*decoded[i], count)))
            i += 1
        if i - found != last - first + 1:
            present = {r.offset for r in decoded[found:i]}
            gaps.extend(o for o in range(first, last + 1) if o not in present)
    return records, gaps
