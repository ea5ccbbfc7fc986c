"""KIP-848 consumer group records: bytes as Kafka 4.x's schemas lay them out,
and round trips."""

from __future__ import annotations

import struct
import uuid
from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgroups.coordinator.consumer.records import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    PARTITION_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    TARGET_ASSIGNMENT_METADATA,
    ClassicMemberMetadata,
    CurrentMemberAssignmentValue,
    GroupKey,
    GroupMetadataValue,
    MemberKey,
    MemberMetadataValue,
    PartitionMetadataValue,
    RegularExpressionKey,
    RegularExpressionValue,
    TargetAssignmentMemberValue,
    TargetAssignmentMetadataValue,
    TopicMetadataEntry,
    decode_key,
    decode_record,
    decode_value,
    encode_key,
    encode_record,
    encode_value,
    is_consumer_group_key,
)
from kgroups.coordinator.record_codec import RecordFormatError

TOPIC = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
OTHER = uuid.UUID("ffeeddcc-bbaa-9988-7766-554433221100")


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def compact(text: str) -> bytes:
    """A compact string whose length fits one varint byte."""
    return bytes([len(text) + 1]) + text.encode()


# -- keys: int16 record type, then non-flexible strings ----------------------


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (GroupKey(GROUP_METADATA, "g"), b"\x00\x03" + b"\x00\x01g"),
        (GroupKey(PARTITION_METADATA, "g"), b"\x00\x04" + b"\x00\x01g"),
        (MemberKey(MEMBER_METADATA, "g", "m1"), b"\x00\x05" + b"\x00\x01g" + b"\x00\x02m1"),
        (GroupKey(TARGET_ASSIGNMENT_METADATA, "g"), b"\x00\x06" + b"\x00\x01g"),
        (MemberKey(TARGET_ASSIGNMENT_MEMBER, "g", "m1"), b"\x00\x07\x00\x01g\x00\x02m1"),
        (MemberKey(CURRENT_MEMBER_ASSIGNMENT, "g", "m1"), b"\x00\x08\x00\x01g\x00\x02m1"),
        (RegularExpressionKey("g", "a.*"), b"\x00\x10" + b"\x00\x01g" + b"\x00\x03a.*"),
    ],
)
def test_keys_have_kafkas_record_types_and_layout(key: object, expected: bytes) -> None:
    assert encode_key(key) == expected  # type: ignore[arg-type]
    assert decode_key(expected) == key
    assert is_consumer_group_key(expected)


def test_offset_and_classic_group_keys_are_not_consumer_group_keys() -> None:
    assert not is_consumer_group_key(b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00")
    assert not is_consumer_group_key(b"\x00\x02\x00\x01g")
    with pytest.raises(RecordFormatError):
        decode_key(b"\x00\x02\x00\x01g")


# -- values: int16 version 0, flexible ---------------------------------------


def test_group_metadata_value_bytes() -> None:
    assert encode_value(GroupMetadataValue(5)) == i16(0) + i32(5) + b"\x00"
    # Kafka 4.1's metadata hash: tagged field 0, an int64, written when not 0.
    with_hash = i16(0) + i32(5) + b"\x01" + b"\x00" + b"\x08" + i64(-42)
    assert encode_value(GroupMetadataValue(5, -42)) == with_hash
    assert decode_value(GROUP_METADATA, with_hash) == GroupMetadataValue(5, -42)


def test_group_metadata_value_skips_tagged_fields_it_does_not_know() -> None:
    # A newer Kafka's creation time (tag 1) beside the hash.
    data = i16(0) + i32(7) + b"\x02" + b"\x00\x08" + i64(9) + b"\x01\x08" + i64(1234)
    assert decode_value(GROUP_METADATA, data) == GroupMetadataValue(7, 9)


def test_member_metadata_value_bytes() -> None:
    value = MemberMetadataValue(
        instance_id=None,
        rack_id="r",
        client_id="c",
        client_host="/h",
        subscribed_topic_names=("t",),
        subscribed_topic_regex=None,
        rebalance_timeout_ms=30_000,
        server_assignor="uniform",
    )
    expected = (
        i16(0)
        + b"\x00"  # instance id: null
        + compact("r")
        + compact("c")
        + compact("/h")
        + b"\x02"  # one subscribed topic
        + compact("t")
        + b"\x00"  # regex: null
        + i32(30_000)
        + compact("uniform")
        + b"\x00"  # no tagged fields
    )
    assert encode_value(value) == expected
    assert decode_value(MEMBER_METADATA, expected) == value


def test_member_metadata_value_with_classic_member_metadata() -> None:
    value = MemberMetadataValue(
        instance_id="i",
        rack_id=None,
        client_id="c",
        client_host="h",
        subscribed_topic_names=(),
        subscribed_topic_regex="a.*",
        rebalance_timeout_ms=-1,
        server_assignor=None,
        classic_member_metadata=ClassicMemberMetadata(10_000, (("range", b"\x01"),)),
    )
    struct_bytes = (
        i32(10_000) + b"\x02" + compact("range") + b"\x02\x01" + b"\x00" + b"\x00"
    )  # one protocol: name, metadata bytes, its tags; then the struct's tags
    tagged = b"\x01" + b"\x00" + bytes([len(struct_bytes) + 1]) + b"\x01" + struct_bytes
    expected = (
        i16(0)
        + compact("i")
        + b"\x00"
        + compact("c")
        + compact("h")
        + b"\x01"  # no subscribed topic names
        + compact("a.*")
        + i32(-1)
        + b"\x00"
        + tagged
    )
    assert encode_value(value) == expected
    assert decode_value(MEMBER_METADATA, expected) == value


def test_current_member_assignment_value_bytes() -> None:
    value = CurrentMemberAssignmentValue(
        member_epoch=3,
        previous_member_epoch=2,
        state=1,
        assigned_partitions=MappingProxyType({TOPIC: frozenset({1, 0})}),
        partitions_pending_revocation=MappingProxyType({}),
    )
    expected = (
        i16(0)
        + i32(3)
        + i32(2)
        + b"\x01"  # state: int8
        + b"\x02"  # one topic
        + TOPIC.bytes
        + b"\x03"  # two partitions, ascending
        + i32(0)
        + i32(1)
        + b"\x00"  # the topic's tagged fields
        + b"\x01"  # nothing pending revocation
        + b"\x00"
    )
    assert encode_value(value) == expected
    assert decode_value(CURRENT_MEMBER_ASSIGNMENT, expected) == value


def test_target_assignment_values_bytes() -> None:
    member = TargetAssignmentMemberValue(MappingProxyType({TOPIC: frozenset({2})}))
    expected = i16(0) + b"\x02" + TOPIC.bytes + b"\x02" + i32(2) + b"\x00" + b"\x00"
    assert encode_value(member) == expected
    assert decode_value(TARGET_ASSIGNMENT_MEMBER, expected) == member
    metadata = TargetAssignmentMetadataValue(4)
    assert encode_value(metadata) == i16(0) + i32(4) + b"\x00"


def test_partition_metadata_value_as_kafka_4_0_wrote_it() -> None:
    data = (
        i16(0)
        + b"\x02"
        + TOPIC.bytes
        + compact("t")
        + i32(3)
        + b"\x02"  # one partition with racks
        + i32(0)
        + b"\x02"
        + compact("r1")
        + b"\x00"
        + b"\x00"  # the topic's tagged fields
        + b"\x00"
    )
    value = PartitionMetadataValue((TopicMetadataEntry(TOPIC, "t", 3, ((0, ("r1",)),)),))
    assert decode_value(PARTITION_METADATA, data) == value
    assert encode_value(value) == data


def test_regular_expression_value_bytes() -> None:
    value = RegularExpressionValue(("ab",), 12, 1_700_000_000_000)
    expected = i16(0) + b"\x02" + compact("ab") + i64(12) + i64(1_700_000_000_000) + b"\x00"
    assert encode_value(value) == expected
    assert decode_record(*encode_record(RegularExpressionKey("g", "a.*"), value)) == (
        RegularExpressionKey("g", "a.*"),
        value,
    )


def test_tombstones_have_no_value() -> None:
    key = MemberKey(MEMBER_METADATA, "g", "m")
    encoded = encode_record(key, None)
    assert encoded[1] is None
    assert decode_record(*encoded) == (key, None)


def test_unknown_value_version_is_refused() -> None:
    with pytest.raises(RecordFormatError):
        decode_value(GROUP_METADATA, i16(1) + i32(5) + b"\x00")


def test_truncated_value_is_refused() -> None:
    data = encode_value(TargetAssignmentMemberValue(MappingProxyType({TOPIC: frozenset({1})})))
    with pytest.raises(RecordFormatError):
        decode_value(TARGET_ASSIGNMENT_MEMBER, data[:-3])


assignments = st.dictionaries(
    st.sampled_from([TOPIC, OTHER]),
    st.frozensets(st.integers(0, 2**31 - 1), min_size=1, max_size=20),
    max_size=2,
).map(MappingProxyType)
names = st.text(max_size=300)


@given(
    epoch=st.integers(-(2**31), 2**31 - 1),
    previous=st.integers(-(2**31), 2**31 - 1),
    state=st.sampled_from([0, 1, 2, 127]),
    assigned=assignments,
    pending=assignments,
)
def test_current_member_assignment_round_trips(
    epoch: int, previous: int, state: int, assigned: object, pending: object
) -> None:
    value = CurrentMemberAssignmentValue(epoch, previous, state, assigned, pending)  # type: ignore[arg-type]
    assert decode_value(CURRENT_MEMBER_ASSIGNMENT, encode_value(value)) == value


@given(
    instance=st.none() | names,
    rack=st.none() | names,
    client=names,
    topics=st.lists(names, max_size=5).map(tuple),
    regex=st.none() | names,
    timeout=st.integers(-1, 2**31 - 1),
    assignor=st.none() | names,
)
def test_member_metadata_round_trips(
    instance: str | None,
    rack: str | None,
    client: str,
    topics: tuple[str, ...],
    regex: str | None,
    timeout: int,
    assignor: str | None,
) -> None:
    value = MemberMetadataValue(instance, rack, client, "/h", topics, regex, timeout, assignor)
    key = MemberKey(MEMBER_METADATA, client, "m")
    assert decode_record(*encode_record(key, value)) == (key, value)
