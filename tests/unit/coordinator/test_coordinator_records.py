"""__consumer_offsets record formats: golden bytes and round trips."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgroups.coordinator.offsets import CommittedOffset
from kgroups.coordinator.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordFormatError,
    UnknownKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s(text: str) -> bytes:
    return i16(len(text)) + text.encode()


MEMBER = MemberMetadataValue(
    member_id="m-1",
    group_instance_id="i-1",
    client_id="c",
    client_host="/h",
    rebalance_timeout=30_000,
    session_timeout=10_000,
    subscription=b"sub",
    assignment=b"as",
)
GROUP = GroupMetadataValue(
    protocol_type="consumer",
    generation=7,
    protocol="range",
    leader="m-1",
    current_state_timestamp=1234,
    members=(MEMBER,),
)


def test_offset_commit_key_is_version_1_group_topic_partition() -> None:
    key = encode_offset_commit_key("g", "t", 1)
    assert key == i16(1) + s("g") + s("t") + i32(1)
    assert decode_key(key) == OffsetCommitKey("g", "t", 1)


def test_offset_commit_key_version_0_reads_the_same() -> None:
    assert decode_key(i16(0) + s("g") + s("t") + i32(3)) == OffsetCommitKey("g", "t", 3)


def test_group_metadata_key_is_version_2() -> None:
    key = encode_group_metadata_key("group")
    assert key == i16(2) + s("group")
    assert decode_key(key) == GroupMetadataKey("group")


def test_other_key_versions_are_not_ours() -> None:
    assert decode_key(i16(3) + s("g")) == UnknownKey(3)


def test_offset_value_is_written_as_v3() -> None:
    value = OffsetCommitValue(offset=5, metadata="m", commit_timestamp=1000, leader_epoch=7)
    encoded = encode_offset_commit_value(value)
    assert encoded == i16(3) + i64(5) + i32(7) + s("m") + i64(1000)
    assert decode_offset_commit_value(encoded) == value


def test_offset_value_with_an_expiry_is_written_as_v1() -> None:
    value = OffsetCommitValue(offset=5, metadata="m", commit_timestamp=1000, expire_timestamp=2000)
    encoded = encode_offset_commit_value(value)
    assert encoded == i16(1) + i64(5) + s("m") + i64(1000) + i64(2000)
    assert decode_offset_commit_value(encoded) == value


@pytest.mark.parametrize("version", [0, 2])
def test_offset_value_v0_and_v2_have_no_epoch_nor_expiry(version: int) -> None:
    decoded = decode_offset_commit_value(i16(version) + i64(9) + s("x") + i64(77))
    assert decoded == OffsetCommitValue(offset=9, metadata="x", commit_timestamp=77)


def test_offset_value_v4_is_flexible_and_skips_unknown_tags() -> None:
    body = i64(9) + i32(3) + bytes([2]) + b"x" + i64(77)
    tagged = bytes([1, 5, 2]) + b"zz"  # one tagged field: tag 5, two bytes
    decoded = decode_offset_commit_value(i16(4) + body + tagged)
    assert decoded == OffsetCommitValue(offset=9, metadata="x", commit_timestamp=77, leader_epoch=3)
    assert encode_offset_commit_value(decoded, version=4) == i16(4) + body + bytes([0])


def test_group_value_is_written_as_v3() -> None:
    expected = (
        i16(3)
        + s("consumer")
        + i32(7)
        + s("range")
        + s("m-1")
        + i64(1234)
        + i32(1)
        + s("m-1")
        + s("i-1")
        + s("c")
        + s("/h")
        + i32(30_000)
        + i32(10_000)
        + i32(3)
        + b"sub"
        + i32(2)
        + b"as"
    )
    assert encode_group_metadata_value(GROUP) == expected
    assert decode_group_metadata_value(expected) == GROUP


def test_empty_group_value_has_null_protocol_and_leader() -> None:
    value = GroupMetadataValue("consumer", 3, None, None, 99, ())
    encoded = encode_group_metadata_value(value)
    assert encoded == i16(3) + s("consumer") + i32(3) + i16(-1) + i16(-1) + i64(99) + i32(0)
    assert decode_group_metadata_value(encoded) == value


def test_group_value_v0_lacks_rebalance_timeout_instance_id_and_timestamp() -> None:
    encoded = encode_group_metadata_value(GROUP, version=0)
    member = i32(1) + s("m-1") + s("c") + s("/h") + i32(10_000) + i32(3) + b"sub" + i32(2) + b"as"
    assert encoded == i16(0) + s("consumer") + i32(7) + s("range") + s("m-1") + member
    decoded = decode_group_metadata_value(encoded)
    assert decoded.current_state_timestamp == -1
    assert decoded.members[0].rebalance_timeout == -1
    assert decoded.members[0].group_instance_id is None


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_group_value_round_trips_in_every_version(version: int) -> None:
    decoded = decode_group_metadata_value(encode_group_metadata_value(GROUP, version=version))
    expected_instance = "i-1" if version >= 3 else None
    expected_timestamp = 1234 if version >= 2 else -1
    assert decoded.members[0].group_instance_id == expected_instance
    assert decoded.current_state_timestamp == expected_timestamp
    assert decoded.members[0].rebalance_timeout == 30_000
    assert decoded.members[0].assignment == b"as"


def test_group_value_v4_uses_compact_encodings() -> None:
    encoded = encode_group_metadata_value(GROUP, version=4)
    assert encoded.startswith(i16(4) + bytes([9]) + b"consumer" + i32(7) + bytes([6]) + b"range")
    assert encoded.endswith(bytes([3]) + b"as" + bytes([0]) + bytes([0]))


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00", i16(9) + i64(1), i16(3) + i64(1), i16(3) + s("consumer") + i32(1)],
)
def test_truncated_or_unknown_values_are_rejected(data: bytes) -> None:
    with pytest.raises(RecordFormatError):
        decode_offset_commit_value(data)
    with pytest.raises(RecordFormatError):
        decode_group_metadata_value(data)


texts = st.text(max_size=20)
member_values = st.builds(
    MemberMetadataValue,
    member_id=texts,
    group_instance_id=st.none() | texts,
    client_id=texts,
    client_host=texts,
    rebalance_timeout=st.integers(0, 2**31 - 1),
    session_timeout=st.integers(0, 2**31 - 1),
    subscription=st.binary(max_size=50),
    assignment=st.binary(max_size=50),
)


@given(
    st.builds(
        GroupMetadataValue,
        protocol_type=texts,
        generation=st.integers(0, 2**31 - 1),
        protocol=st.none() | texts,
        leader=st.none() | texts,
        current_state_timestamp=st.integers(-1, 2**62),
        members=st.lists(member_values, max_size=4).map(tuple),
    ),
    st.sampled_from([3, 4]),
)
def test_any_group_value_round_trips(value: GroupMetadataValue, version: int) -> None:
    assert decode_group_metadata_value(encode_group_metadata_value(value, version)) == value


@given(
    st.builds(
        OffsetCommitValue,
        offset=st.integers(-1, 2**63 - 1),
        metadata=texts,
        commit_timestamp=st.integers(0, 2**62),
        leader_epoch=st.integers(-1, 2**31 - 1),
        expire_timestamp=st.just(-1) | st.integers(0, 2**62),
    )
)
def test_any_offset_value_round_trips_in_the_version_kafka_writes(value: OffsetCommitValue) -> None:
    decoded = decode_offset_commit_value(encode_offset_commit_value(value))
    if value.expire_timestamp == -1:
        assert decoded == value
    else:  # v1 has no leader epoch
        assert decoded == OffsetCommitValue(
            value.offset, value.metadata, value.commit_timestamp, -1, value.expire_timestamp
        )


@given(
    offset=st.integers(0, 2**62),
    leader_epoch=st.integers(-1, 2**31 - 1),
    metadata=st.text(max_size=30),
    commit_ms=st.integers(0, 2**45),
)
def test_a_committed_offset_survives_its_record(
    offset: int, leader_epoch: int, metadata: str, commit_ms: int
) -> None:
    """The live path applies a CommittedOffset without expiry (value v3) without
    decoding the record it wrote; replay decodes it. Both must hold the same value."""
    committed = CommittedOffset(
        offset=offset,
        leader_epoch=leader_epoch,
        metadata=metadata,
        commit_timestamp_ms=commit_ms,
    )
    value = decode_offset_commit_value(encode_offset_commit_value(committed.to_record()))
    assert CommittedOffset.from_record(value) == committed
