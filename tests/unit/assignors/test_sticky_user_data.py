"""The eager sticky assignor's user data, as the Java client and kafka-python
write it."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

from kgroups.assignors import TopicPartition, decode_subscription
from kgroups.assignors.sticky_user_data import encode_sticky_user_data, read_sticky_user_data

partitions = st.lists(
    st.builds(TopicPartition, st.text("abc.-_", min_size=1, max_size=5), st.integers(0, 999)),
    unique=True,
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(partitions, st.integers(-1, 2**31 - 1))
def test_round_trip(owned: list[TopicPartition], generation: int) -> None:
    data = read_sticky_user_data(encode_sticky_user_data(owned, generation))
    assert data is not None
    assert sorted(data.partitions()) == sorted(owned)
    assert data.generation == generation


def kafka_python_user_data(owned: list[TopicPartition], generation: int, version: int) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in owned:
        by_topic.setdefault(topic, []).append(partition)
    fields: dict[str, object] = {"previous_assignment": list(by_topic.items())}
    if version == 1:
        fields["generation"] = generation
    data: bytes = StickyAssignorUserData(version=version, **fields).encode()
    return data


@settings(max_examples=40, deadline=None)
@given(partitions, st.integers(-1, 2**31 - 1))
def test_writes_the_java_layout(owned: list[TopicPartition], generation: int) -> None:
    """kafka-python's schema read without its version header, as Java writes."""
    ours = encode_sticky_user_data(owned, generation)
    assert ours == kafka_python_user_data(owned, generation, version=1)[2:]
    decoded = StickyAssignorUserData.decode(ours, version=1, header=False)
    assert decoded.generation == generation


@settings(max_examples=40, deadline=None)
@given(partitions, st.integers(-1, 2**31 - 1), st.sampled_from([0, 1]))
def test_reads_kafka_pythons_version_header(
    owned: list[TopicPartition], generation: int, version: int
) -> None:
    data = read_sticky_user_data(kafka_python_user_data(owned, generation, version))
    assert data is not None
    assert sorted(data.partitions()) == sorted(owned)
    assert data.generation == (generation if version == 1 else None)


def test_trailing_bytes_are_ignored_like_java() -> None:
    data = read_sticky_user_data(encode_sticky_user_data([TopicPartition("t", 1)], 4) + b"\x09")
    assert data is not None
    assert data.partitions() == [TopicPartition("t", 1)]
    assert data.generation == 4


def test_reads_the_user_data_inside_a_kafka_python_subscription() -> None:
    owned = [TopicPartition("orders", 2), TopicPartition("orders", 0), TopicPartition("audit", 1)]
    metadata = StickyPartitionAssignor._metadata({"orders", "audit"}, owned, generation=7)
    subscription = decode_subscription(metadata.encode())
    data = read_sticky_user_data(subscription.user_data or b"")
    assert data is not None
    assert data.generation == 7
    assert sorted(data.partitions()) == sorted(owned)


def test_version_0_has_no_generation() -> None:
    v0 = struct.pack(">ih1si2i", 1, 1, b"t", 2, 4, 5)
    data = read_sticky_user_data(v0)
    assert data is not None
    assert data.partitions() == [TopicPartition("t", 4), TopicPartition("t", 5)]
    assert data.generation is None


def test_unreadable_data_is_none() -> None:
    for junk in (
        b"\x00",
        b"\x00\x00\x00\x05\x00",
        b"\xff\xff\xff\xff",
        b"\x00\x00\x00\x01\x00\x09t",
    ):
        assert read_sticky_user_data(junk) is None


def test_numbered_leaves_out_unknown_topics_and_partitions() -> None:
    data = read_sticky_user_data(
        encode_sticky_user_data(
            [
                TopicPartition("a", 0),
                TopicPartition("a", 5),
                TopicPartition("b", 1),
                TopicPartition("gone", 0),
            ],
            3,
        )
    )
    assert data is not None
    # "a" has partitions 0..2 numbered from 10; "b" 0..1 numbered from 20.
    assert data.numbered({b"a": (10, 3), b"b": (20, 2)}) == [10, 21]
