"""One partition's share of a ShareFetch answer, turned into records.

The broker sends whole record batches as stored, and the ranges of offsets it
acquired for this member, each with its delivery count. Only the acquired part
of each batch is decoded: members sharing a partition each get a few records
of the same large batch, and decoding all of it for each of them cost a member
more than its records did. CRCs are checked on whole batches and transaction
markers withheld, as in a plain fetch (CompletedFetch); a record outside the
acquired ranges is not this member's and is dropped, and an acquired offset
that holds no record (compacted away) is acknowledged as a GAP, as Kafka's
client does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgroups.client.consumer_record import ConsumerRecord, TopicPartition
from kgroups.client.share_record import ShareConsumerRecord
from kgroups.errors import ErrorCode, KafkaError
from kgroups.records.batch import batch_crc, decode_records, iter_batches

__all__ = ["acquired_records"]

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
    decoded = _decode_acquired_span(tp, data or b"", ranges[0][0], ranges[-1][1], check_crcs)
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


def _decode_acquired_span(
    tp: TopicPartition, data: bytes, first: int, last: int, check_crcs: bool
) -> list[ConsumerRecord]:
    """The data records from ``first`` to ``last``, in offset order."""
    view = memoryview(data)
    topic, partition = tp
    out: list[ConsumerRecord] = []
    for pos, header in iter_batches(view):
        if header.last_offset < first or header.is_control:
            continue
        if header.base_offset > last:
            break
        batch = view[pos : pos + header.size]
        if check_crcs and batch_crc(batch, header.size) != header.crc:
            raise KafkaError(
                ErrorCode.corrupt_message,
                f"record batch at offset {header.base_offset} of {tp} fails its CRC",
            )
        ttype = header.timestamp_type
        out.extend(
            _new(ConsumerRecord, (topic, partition, o, t, ttype, k, v, h))
            for o, t, k, v, h in decode_records(batch, first_offset=first, last_offset=last)
        )
    return out
