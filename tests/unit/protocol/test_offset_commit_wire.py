"""The hand-written OffsetCommit reader reads what kio reads, in every
version, and declines what it does not expect."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from kgroups.handlers.dispatch import _read
from kgroups.protocol import apis
from kgroups.protocol.offset_commit_wire import read_offset_commit

from commit_frames import VERSIONS, commit_frame


def _kio(frame: bytes) -> tuple[str, object]:
    """The client id and the request as the general path reads it (upgraded to v9)."""
    version = struct.unpack_from(">h", frame, 2)[0]
    header, body = _read(apis.codec(apis.OFFSET_COMMIT, version), frame, True, apis.OFFSET_COMMIT)
    return header.client_id, body


def _fields(p: Any) -> tuple[int, int, int, str | None]:
    return (p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata)


def _same(frame: bytes) -> None:
    read = read_offset_commit(frame)
    assert read is not None
    client_id, body = _kio(frame)
    assert read.version == struct.unpack_from(">h", frame, 2)[0]
    assert read.correlation_id == 77
    assert read.client_id == client_id
    commit = read.commit
    assert commit.group_id == body.group_id  # type: ignore[attr-defined]
    assert commit.generation_id_or_member_epoch == body.generation_id_or_member_epoch  # type: ignore[attr-defined]
    assert commit.member_id == body.member_id  # type: ignore[attr-defined]
    assert commit.group_instance_id == body.group_instance_id  # type: ignore[attr-defined]
    assert [(t.name, [_fields(p) for p in t.partitions]) for t in commit.topics] == [
        (
            t.name,
            [
                (
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.committed_metadata,
                )
                for p in t.partitions
            ],
        )
        for t in body.topics  # type: ignore[attr-defined]
    ]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("metadata", ["", None, "checkpoint-ü"])
def test_reads_what_kio_reads(version: int, metadata: str | None) -> None:
    instance = "instance-1" if version >= 7 else None
    _same(
        commit_frame(
            version,
            "orders",
            {"t": [0, 1, 2], "u": [5]},
            generation=7,
            member_id="rdkafka-3f1c",
            instance_id=instance,
            metadata=metadata,
        )
    )
    _same(commit_frame(version, "simple", {"t": list(range(20))}, offset=2**40))
    _same(commit_frame(version, "nothing", {}))


@pytest.mark.parametrize("version", VERSIONS)
def test_declines_truncated_frames_and_bytes_left_over(version: int) -> None:
    frame = commit_frame(version, "orders", {"t": [0, 1]}, metadata="m")
    for end in range(len(frame)):
        assert read_offset_commit(frame[:end]) is None
    assert read_offset_commit(frame + b"\x00") is None


@pytest.mark.parametrize("version", [2, 3, 4])
def test_an_explicit_retention_time_takes_the_general_path(version: int) -> None:
    assert read_offset_commit(commit_frame(version, "g", {"t": [0]}, retention_ms=60_000)) is None


def test_declines_tagged_fields_and_other_requests() -> None:
    frame = commit_frame(9, "orders", {"t": [0]})
    tagged = frame[:-1] + b"\x01\x00\x00"  # a body tagged field (tag 0, empty)
    assert read_offset_commit(tagged) is None
    heartbeat = struct.pack(">hhi", apis.HEARTBEAT, 4, 1) + frame[8:]
    assert read_offset_commit(heartbeat) is None
    too_new = struct.pack(">hhi", apis.OFFSET_COMMIT, 10, 1) + frame[8:]
    assert read_offset_commit(too_new) is None


def test_long_names_take_the_general_path() -> None:
    frame = commit_frame(9, "g" * 200, {"t": [0]})
    assert read_offset_commit(frame) is None
    assert read_offset_commit(commit_frame(7, "g" * 200, {"t": [0]})) is not None
