"""Offset commit records decoded from Arrow key and value columns at once.

Offset commits (keys v0/v1, values v0-v4, and their tombstones) are nearly every
record of ``__consumer_offsets``. Their fields sit at positions a few int16
lengths determine, so they are read with numpy over the columns' byte buffers,
every record at once, instead of record by record.

Only what is certainly read the way the coordinator's decoders read it is
taken: a record that is anything else (another key version, a null string, a
v4 value with tagged fields or a long metadata length, a record that ends
early, text that is not UTF-8) is left to those decoders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt
    import pyarrow as pa

    Ints = npt.NDArray[np.int64]
    Bools = npt.NDArray[np.bool_]

__all__ = ["OffsetCommitColumns", "offset_commit_columns"]

# Reads at a position past a field's end land in this padding; the length
# checks then refuse the record.
_PAD = 32


@dataclass(slots=True)
class OffsetCommitColumns:
    """The rows taken (``rows``: their positions in the input) and their columns,
    named as the decoded schema names them."""

    rows: Ints
    columns: dict[str, pa.Array]


def offset_commit_columns(keys: pa.Array, values: pa.Array) -> OffsetCommitColumns:
    """The offset commit records among ``keys``/``values`` (Arrow binary arrays),
    decoded; every other record is left out of ``rows``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kbuf, kstart, klen = _spans(keys)
    vbuf, vstart, vlen = _spans(values)

    key_version = _int16(kbuf, kstart)
    ok = (klen >= 4) & ((key_version == 0) | (key_version == 1))
    group_length = _int16(kbuf, kstart + 2)
    topic_at = 4 + group_length
    topic_length = _int16(kbuf, kstart + topic_at)
    partition_at = topic_at + 2 + topic_length
    ok &= (group_length >= 0) & (topic_length >= 0) & (klen >= partition_at + 4)
    partition = _int32(kbuf, kstart + partition_at)

    tombstone = vlen < 0
    value_version = _int16(vbuf, vstart)
    v = np.where(vlen >= 2, value_version, -1)
    classic = (v == 0) | (v == 2)  # offset, metadata, commit timestamp
    with_expiry = v == 1  # ... and expire timestamp
    with_epoch = v == 3  # offset, leader epoch, metadata, commit timestamp
    flexible = v == 4  # as v3, compact metadata and tagged fields
    # Where the metadata string starts, and its length (int16, or a one-byte
    # uvarint of length + 1 in v4).
    metadata_at = np.select([classic | with_expiry, with_epoch], [12, 16], 15)
    short_length = _byte(vbuf, vstart + 14)
    metadata_length = np.where(flexible, short_length - 1, _int16(vbuf, vstart + metadata_at - 2))
    flexible_ok = flexible & (short_length >= 1) & (short_length < 0x80)
    commit_at = metadata_at + metadata_length
    needed = commit_at + 8 + np.where(with_expiry | flexible, np.where(flexible, 1, 8), 0)
    value_ok = (
        (classic | with_expiry | with_epoch | flexible_ok)
        & (metadata_length >= 0)
        & (vlen >= needed)
    )
    # v4: no tagged fields (a tagged field count of zero) is all that is read here.
    value_ok &= ~flexible | (_byte(vbuf, vstart + commit_at + 8) == 0)
    ok &= tombstone | value_ok

    rows = np.flatnonzero(ok)
    commit = ~tombstone[rows]
    k, vs = kstart[rows], vstart[rows]
    spans = [
        (kbuf, k + 4, group_length[rows]),
        (kbuf, k + topic_at[rows] + 2, topic_length[rows]),
        (vbuf, vs + metadata_at[rows], np.where(commit, metadata_length[rows], 0)),
    ]
    text = [_strings(*span) for span in spans]
    if any(t is None for t in text):  # a string is not UTF-8: its record is left out
        utf8 = np.logical_and.reduce([_utf8(*span) for span in spans])
        rows, commit, k, vs = rows[utf8], commit[utf8], k[utf8], vs[utf8]
        text = [_strings(buf, at[utf8], length[utf8]) for buf, at, length in spans]
    group, topic, metadata = text
    assert group is not None and topic is not None and metadata is not None

    def nullable(data: npt.NDArray[np.int64], valid: Bools, kind: pa.DataType) -> pa.Array:
        return pa.array(data, kind, mask=~valid)

    has_epoch = commit & (v[rows] >= 3)
    epoch = np.where(has_epoch, _int32(vbuf, vs + 10), -1)
    expire = np.where(with_expiry[rows], _int64(vbuf, vs + commit_at[rows] + 8), -1)
    kinds = pa.DictionaryArray.from_arrays(
        pa.array(commit.astype(np.int8)), pa.array(["offset_deleted", "offset_commit"])
    ).cast(pa.string())
    return OffsetCommitColumns(
        rows,
        {
            "kind": kinds,
            "group": group,
            "topic": topic,
            "partition": pa.array(partition[rows].astype(np.int32)),
            "key_version": pa.array(key_version[rows].astype(np.int32)),
            "value_version": nullable(v[rows].astype(np.int32), commit, pa.int32()),
            "committed_offset": nullable(_int64(vbuf, vs + 2), commit, pa.int64()),
            "leader_epoch": nullable(epoch.astype(np.int32), commit, pa.int32()),
            "metadata": metadata
            if commit.all()
            else pc.if_else(pa.array(commit), metadata, pa.scalar(None, pa.string())),
            "commit_ms": nullable(_int64(vbuf, vs + commit_at[rows]), commit, pa.int64()),
            "expire_ms": nullable(expire, commit & (expire >= 0), pa.int64()),
        },
    )


def _spans(array: pa.Array) -> tuple[npt.NDArray[np.uint8], Ints, Ints]:
    """A binary array's bytes (padded), each value's start and length (-1: null)."""
    import pyarrow as pa

    wide = pa.types.is_large_binary(array.type)
    _, offsets_buffer, data_buffer = array.buffers()
    n = len(array)
    width = np.int64 if wide else np.int32
    window = np.frombuffer(offsets_buffer, width)[array.offset : array.offset + n + 1]
    offsets: Ints = window.astype(np.int64)
    data = np.frombuffer(data_buffer or b"", np.uint8)
    buf = np.concatenate([data[: offsets[-1]], np.zeros(_PAD, np.uint8)])
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    if array.null_count:
        lengths[array.is_null().to_numpy(zero_copy_only=False)] = -1
    return buf, starts, lengths


def _bytes(buf: npt.NDArray[np.uint8], at: Ints, size: int) -> npt.NDArray[np.uint8]:
    """``size`` bytes at each of ``at`` (clipped into the buffer), one row each."""
    at = np.clip(at, 0, len(buf) - _PAD)
    taken: npt.NDArray[np.uint8] = buf[at[:, None] + np.arange(size)]
    return taken


def _byte(buf: npt.NDArray[np.uint8], at: Ints) -> Ints:
    return _bytes(buf, at, 1)[:, 0].astype(np.int64)


def _int16(buf: npt.NDArray[np.uint8], at: Ints) -> Ints:
    return np.ascontiguousarray(_bytes(buf, at, 2)).view(">i2")[:, 0].astype(np.int64)


def _int32(buf: npt.NDArray[np.uint8], at: Ints) -> Ints:
    return np.ascontiguousarray(_bytes(buf, at, 4)).view(">i4")[:, 0].astype(np.int64)


def _int64(buf: npt.NDArray[np.uint8], at: Ints) -> Ints:
    return np.ascontiguousarray(_bytes(buf, at, 8)).view(">i8")[:, 0].astype(np.int64)


def _utf8(buf: npt.NDArray[np.uint8], starts: Ints, lengths: Ints) -> Bools:
    """Which spans are UTF-8, one by one: only for a batch where one is not."""
    data = buf.tobytes()
    valid = np.ones(len(starts), np.bool_)
    for i, (start, length) in enumerate(zip(starts.tolist(), lengths.tolist(), strict=True)):
        try:
            data[start : start + length].decode()
        except UnicodeDecodeError:
            valid[i] = False
    return valid


def _strings(buf: npt.NDArray[np.uint8], starts: Ints, lengths: Ints) -> pa.Array | None:
    """Arrow strings of the spans of ``buf``; None if one is not UTF-8."""
    import pyarrow as pa

    offsets = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    positions = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
    data = buf[positions]
    kind, width = (pa.string(), np.int32) if offsets[-1] < 2**31 else (pa.large_string(), np.int64)
    array = pa.Array.from_buffers(
        kind, len(starts), [None, pa.py_buffer(offsets.astype(width)), pa.py_buffer(data)]
    )
    try:
        array.validate(full=True)
    except pa.ArrowInvalid:
        return None
    return array if kind == pa.string() else array.cast(pa.string())
