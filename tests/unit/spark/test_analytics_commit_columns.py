"""`kgroups analytics` decodes offset commits a batch at a time with numpy: every
row it yields equals the row the coordinator's decoders give record by record,
on a log mixing every key and value version, tombstones, group metadata and
consumer group records, and records that are malformed."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

import pyarrow as pa

from kgroups.assignors.protocol import Subscription, encode_subscription
from kgroups.coordinator.consumer import records as consumer_records
from kgroups.coordinator.record_codec import Writer
from kgroups.coordinator.records import (
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitValue,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from kgroups.spark.analytics.commit_columns import offset_commit_columns
from kgroups.spark.analytics.offsets_log import decode_batches, decode_record

T0 = 1_700_000_000_000


def _commit_values() -> list[bytes]:
    values = []
    for version in range(5):
        for metadata in ("", "m", "métadonnée " * 3, "x" * 200):
            for expire in (-1, T0 + 86_400_000):
                value = OffsetCommitValue(
                    offset=2**40 + version,
                    metadata=metadata,
                    commit_timestamp=T0 + version,
                    leader_epoch=7 if version >= 3 else -1,
                    expire_timestamp=expire if version == 1 else -1,
                )
                values.append(encode_offset_commit_value(value, version))
    return values


def _v0_key(group: str, topic: str, partition: int) -> bytes:
    writer = Writer(0, flexible=False)
    writer.string(group)
    writer.string(topic)
    writer.int32(partition)
    return writer.getvalue()


def _group_value() -> bytes:
    member = MemberMetadataValue(
        "m-1", None, "c", "/10.0.0.1", 30_000, 10_000, encode_subscription(Subscription(["t"])), b""
    )
    return encode_group_metadata_value(
        GroupMetadataValue("consumer", 3, "range", "m-1", T0, (member,))
    )


def _log() -> list[tuple[bytes | None, bytes | None]]:
    keys = [
        encode_offset_commit_key("orders", "payments", 3),
        encode_offset_commit_key("g-é", "t", -1),
        encode_offset_commit_key("", "", 0),
        _v0_key("legacy", "events", 2**31 - 1),
    ]
    good = [(key, value) for key in keys for value in _commit_values()]
    good += [(key, None) for key in keys]  # offset deletions
    others: list[tuple[bytes | None, bytes | None]] = [
        (encode_group_metadata_key("orders"), _group_value()),
        (encode_group_metadata_key("orders"), None),
        consumer_records.encode_record(
            consumer_records.GroupKey(consumer_records.GROUP_METADATA, "cg"),
            consumer_records.GroupMetadataValue(4),
        ),
        (None, b"\x00\x03"),  # no key
        (b"\x00\x09whatever", b""),  # a future key version
    ]
    commit_key, v3, v4 = keys[0], _commit_values()[24], _commit_values()[32]
    assert v3[:2] == b"\x00\x03" and v4[:2] == b"\x00\x04"
    malformed: list[tuple[bytes | None, bytes | None]] = [
        (commit_key, v4[:-1] + b"\x01\x00\x00"),  # v4 with a tagged field
        (commit_key, v3[:14] + b"\xff\xff" + v3[16:]),  # null metadata
        (commit_key, v3[:14] + b"\x00\x02\xed\xa0" + v3[16:]),  # a surrogate: not UTF-8
        (b"\x00\x01\x00\x02\xff\xfe\x00\x01t\x00\x00\x00\x01", v3),  # group not UTF-8
        (commit_key, b"\x00\x05" + v3[2:]),  # a future value version
        (commit_key[:3], v3),  # key too short
        (commit_key, b"\x00"),  # value too short
    ]
    rng = random.Random(848)
    for key, value in good[: len(good) // 2]:
        assert key is not None and value is not None
        malformed.append((key[: rng.randrange(len(key))], value))
        malformed.append((key, value[: rng.randrange(len(value))]))
        flipped = bytearray(value)
        flipped[rng.randrange(len(value))] = rng.randrange(256)
        malformed.append((key, bytes(flipped)))
    log = good + others + malformed
    rng.shuffle(log)
    return log


def _batch(log: list[tuple[bytes | None, bytes | None]]) -> pa.RecordBatch:
    n = len(log)
    return pa.RecordBatch.from_pydict(
        {
            "key": pa.array([k for k, _ in log], pa.binary()),
            "value": pa.array([v for _, v in log], pa.binary()),
            "partition": pa.array([i % 3 for i in range(n)], pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([(T0 + i) * 1000 + 999 for i in range(n)], pa.int64()).cast(
                pa.timestamp("us", tz="UTC")
            ),
        }
    )


def _expected(log: list[tuple[bytes | None, bytes | None]]) -> list[dict[str, Any]]:
    rows = []
    for i, (key, value) in enumerate(log):
        row = decode_record(key, value, {})
        row.update(offsets_partition=i % 3, offsets_offset=i, record_ms=T0 + i)
        rows.append(row)
    return rows


def _decoded(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    rows = []
    for out in decode_batches(iter([batch]), {}):
        rows += out.to_pylist()
    return [{k: v for k, v in row.items() if v is not None} for row in rows]


def _without_nulls(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if v is not None} for row in rows]


def test_batch_decoding_gives_the_rows_of_the_record_decoders() -> None:
    log = _log()
    assert _decoded(_batch(log)) == _without_nulls(_expected(log))


def test_offset_commits_are_decoded_by_columns() -> None:
    """Every well-formed offset commit (all versions but v4 with long metadata)
    is taken by the columnar decoder, nothing else is."""
    log = _log()
    batch = _batch(log)
    taken = set(offset_commit_columns(batch.column("key"), batch.column("value")).rows.tolist())
    expected = _expected(log)
    commits = {
        i
        for i, row in enumerate(expected)
        if row["kind"] in ("offset_commit", "offset_deleted")
        and not (row["value_version"] == 4 and len(row["metadata"].encode()) > 126)
    }
    assert taken <= commits
    # Malformed bytes that still decode may fall back; every valid commit of the
    # good part of the log is taken.
    assert len(taken) >= len(commits) - 400
    assert all(expected[i]["kind"].startswith("offset_") for i in taken)


def test_sliced_columns_and_a_batch_without_commits() -> None:
    log = _log()
    batch = _batch(log).slice(7, 300)
    assert _decoded(batch) == _without_nulls(_expected(log)[7:307])
    none = [(encode_group_metadata_key("g"), _group_value())] * 3
    assert _decoded(_batch(none)) == _without_nulls(_expected(none))


def test_a_batch_of_commits_only_is_decoded_whole() -> None:
    key = encode_offset_commit_key(str(uuid.UUID(int=1)), "t", 0)
    log: list[tuple[bytes | None, bytes | None]] = [
        (key, v) for v in _commit_values() if len(v) < 150
    ]
    batch = _batch(log)
    assert len(offset_commit_columns(batch.column("key"), batch.column("value")).rows) == len(log)
    assert _decoded(batch) == _without_nulls(_expected(log))
