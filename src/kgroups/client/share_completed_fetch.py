"""One partition's share of a ShareFetch answer, turned into records.

The broker sends whole record batches as stored, and the ranges of offsets it
acquired for this member, each with its delivery count. Only the acquired part
of each batch is decoded: members sharing a partition each get a few records
of the same large batch, and decoding all of it for each of them cost a member
more than its records did. CRCs are checked on whole batches and transaction
markers withheld, as in a plain fetch (CompletedFetch); a record outside the
acquired ranges is not this member's and is dropped, and an acquired offset
that holds no record (compacted away) is acknowledged as a GAP, as Kafka's
client does. Each record is built once, as the ShareConsumerRecord poll
hands out, from the tuple the batch scanner reads: going through the plain
consumer's record first cost as much again as the scan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgroups.client.consumer_record import TopicPartition
from kgroups.client.share_record import ShareConsumerRecord
from kgroups.errors import ErrorCode, KafkaError
from kgroups.records.batch import Header, batch_crc, iter_batches, records_section
from kgroups.records.scan import RawHeader, record_span, scan_records

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
    view = memoryview(data or b"")
    topic, partition = tp
    first, last = ranges[0][0], ranges[-1][1]
    records: list[ShareConsumerRecord] = []
    found = [0] * len(ranges)
    r = 0
    new, cls = _new, ShareConsumerRecord
    for pos, header in iter_batches(view):
        if header.last_offset < first or header.is_control:
            continue
        base = header.base_offset
        if base > last:
            break
        if header.magic != 2:
            raise KafkaError(
                ErrorCode.unsupported_for_message_format,
                f"record batch magic {header.magic} is not supported",
            )
        batch = view[pos : pos + header.size]
        if check_crcs and batch_crc(batch, header.size) != header.crc:
            raise KafkaError(
                ErrorCode.corrupt_message,
                f"record batch at offset {base} of {tp} fails its CRC",
            )
        section = records_section(batch, header)
        count = header.records_count
        dense = header.last_offset_delta == count - 1
        ttype = header.timestamp_type
        append_time = header.max_timestamp if ttype else None  # LogAppendTime
        base_ts = header.base_timestamp
        while r < len(ranges) and ranges[r][1] < base:
            r += 1
        k = r
        # Each acquired range in this batch is decoded straight into the
        # records poll hands out: one tuple a record, none in between.
        while k < len(ranges) and ranges[k][0] <= header.last_offset:
            if dense and ranges[k][0] <= base and ranges[k][1] >= header.last_offset:
                span, n = section, count  # the whole batch: nothing to step over
            else:
                start, end, n = record_span(
                    section, count, ranges[k][0] - base, ranges[k][1] - base, dense
                )
                span = section[start:end]
            if n:
                deliveries = ranges[k][2]
                found[k] += n
                records.extend(
                    new(
                        cls,
                        (
                            topic,
                            partition,
                            base + offset_delta,
                            base_ts + timestamp_delta if append_time is None else append_time,
                            ttype,
                            key,
                            value,
                            headers and _text_keys(headers),
                            deliveries,
                        ),
                    )
                    for _, _, offset_delta, timestamp_delta, key, _, value, headers in scan_records(
                        span, n
                    )
                )
            k += 1
    gaps: list[int] = []
    if any(n != hi - lo + 1 for n, (lo, hi, _) in zip(found, ranges, strict=True)):
        present = {rec.offset for rec in records}
        for lo, hi, _ in ranges:
            gaps.extend(o for o in range(lo, hi + 1) if o not in present)
    return records, gaps


def _text_keys(headers: tuple[RawHeader, ...]) -> tuple[Header, ...]:
    return tuple((key.decode("utf-8", "surrogateescape"), value) for key, value in headers)
