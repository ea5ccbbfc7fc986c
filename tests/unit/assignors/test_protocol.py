"""Consumer protocol subscriptions and assignments, every version."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment as KafkaPythonAssignment,
)
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolSubscription as KafkaPythonSubscription,
)

from kgroups.assignors import (
    LATEST_VERSION,
    Assignment,
    ProtocolError,
    Subscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
partition_lists = st.lists(
    st.builds(TopicPartition, names, st.integers(0, 2**31 - 1)), unique=True, max_size=8
)
subscriptions = st.builds(
    Subscription,
    topics=st.lists(names, unique=True, max_size=5),
    user_data=st.one_of(st.none(), st.binary(max_size=16)),
    owned_partitions=partition_lists,
    generation_id=st.integers(-1, 2**31 - 1),
    rack_id=st.one_of(st.none(), names.filter(bool)),
)
assignments = st.builds(
    Assignment, partitions=partition_lists, user_data=st.one_of(st.none(), st.binary(max_size=16))
)


def what_version_keeps(subscription: Subscription, version: int) -> Subscription:
    """The subscription as a reader of that version sees it: sorted as written,
    fields the version lacks at their defaults."""
    return Subscription(
        topics=sorted(subscription.topics),
        user_data=subscription.user_data,
        owned_partitions=sorted(subscription.owned_partitions) if version >= 1 else [],
        generation_id=subscription.generation_id if version >= 2 else -1,
        rack_id=subscription.rack_id if version >= 3 else None,
    )


@settings(max_examples=60, deadline=None)
@given(subscriptions, st.integers(0, LATEST_VERSION))
def test_subscription_round_trips_at_every_version(
    subscription: Subscription, version: int
) -> None:
    data = encode_subscription(subscription, version)
    assert int.from_bytes(data[:2], "big") == version
    assert decode_subscription(data) == what_version_keeps(subscription, version)


@settings(max_examples=60, deadline=None)
@given(assignments, st.integers(0, LATEST_VERSION))
def test_assignment_round_trips_at_every_version(assignment: Assignment, version: int) -> None:
    decoded = decode_assignment(encode_assignment(assignment, version))
    assert decoded.user_data == assignment.user_data
    # Grouped by topic on the wire: the same partitions, per topic in order.
    assert sorted(decoded.partitions) == sorted(assignment.partitions)
    for topic in {t for t, _ in assignment.partitions}:
        assert [p for t, p in decoded.partitions if t == topic] == [
            p for t, p in assignment.partitions if t == topic
        ]


def test_encodes_at_the_newest_version_unless_asked() -> None:
    assert encode_subscription(Subscription(["t"]))[:2] == b"\x00\x03"
    assert encode_assignment(Assignment([]))[:2] == b"\x00\x03"


def test_golden_subscription_bytes() -> None:
    subscription = Subscription(["t"], None, [TopicPartition("t", 0)], generation_id=2, rack_id="r")
    v0 = "0000 00000001 0001 74 ffffffff"
    owned = "00000001 0001 74 00000001 00000000"
    expected = {
        0: v0,
        1: f"0001 00000001 0001 74 ffffffff {owned}",
        2: f"0002 00000001 0001 74 ffffffff {owned} 00000002",
        3: f"0003 00000001 0001 74 ffffffff {owned} 00000002 0001 72",
    }
    for version, text in expected.items():
        assert encode_subscription(subscription, version) == bytes.fromhex(text)
        assert decode_subscription(bytes.fromhex(text)) == what_version_keeps(subscription, version)


def test_golden_assignment_bytes() -> None:
    assignment = Assignment([TopicPartition("t", 0), TopicPartition("t", 1)], b"u")
    body = "00000001 0001 74 00000002 00000000 00000001 00000001 75"
    for version in range(LATEST_VERSION + 1):
        data = bytes.fromhex(f"000{version} {body}")
        assert encode_assignment(assignment, version) == data
        assert decode_assignment(data) == assignment


def test_reads_a_newer_version_as_the_newest_it_knows() -> None:
    """Later versions only append fields; the reader leaves the tail alone."""
    current = encode_subscription(Subscription(["t"], b"x", [], 4, "r"))
    from_the_future = b"\x00\x07" + current[2:] + b"\x00\x00\x00\x2a new field"
    assert decode_subscription(from_the_future) == Subscription(["t"], b"x", [], 4, "r")
    assignment = encode_assignment(Assignment([TopicPartition("t", 3)]))
    assert decode_assignment(b"\x00\x09" + assignment[2:] + b"\xff") == Assignment(
        [TopicPartition("t", 3)]
    )


def test_trailing_bytes_after_an_old_version_are_ignored() -> None:
    data = encode_subscription(Subscription(["t"], None, [TopicPartition("t", 1)], 3), 1)
    assert decode_subscription(data + b"\x00\x00\x00\x03").owned_partitions == [
        TopicPartition("t", 1)
    ]


def test_an_empty_rack_is_no_rack() -> None:
    data = encode_subscription(Subscription(["t"], rack_id=""), 3)
    assert decode_subscription(data).rack_id is None


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\xff\xff" + b"\x00" * 8,
        b"\x00\x00\x00\x00\x00\x05\x00\x01t",
        b"\x00\x01\x00",
    ],
)
def test_malformed_metadata_is_refused(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_subscription(data)
    with pytest.raises(ProtocolError):
        decode_assignment(data)


def test_refuses_to_encode_unknown_versions() -> None:
    with pytest.raises(ValueError):
        encode_subscription(Subscription([]), 4)
    with pytest.raises(ValueError):
        encode_assignment(Assignment([]), -1)


@settings(max_examples=40, deadline=None)
@given(subscriptions, st.integers(0, LATEST_VERSION))
def test_reads_what_kafka_python_writes(subscription: Subscription, version: int) -> None:
    owned: dict[str, list[int]] = {}
    for topic, partition in sorted(subscription.owned_partitions):
        owned.setdefault(topic, []).append(partition)
    fields: dict[str, object] = {
        "topics": sorted(subscription.topics),
        "user_data": subscription.user_data,
    }
    if version >= 1:
        fields["owned_partitions"] = [
            KafkaPythonSubscription.TopicPartition(topic=t, partitions=ps)
            for t, ps in owned.items()
        ]
    if version >= 2:
        fields["generation_id"] = subscription.generation_id
    if version >= 3:
        fields["rack_id"] = subscription.rack_id
    data = KafkaPythonSubscription(version=version, **fields).encode()
    assert data == encode_subscription(subscription, version)
    assert decode_subscription(data) == what_version_keeps(subscription, version)


@settings(max_examples=40, deadline=None)
@given(subscriptions, st.integers(0, LATEST_VERSION))
def test_kafka_python_reads_what_we_write(subscription: Subscription, version: int) -> None:
    decoded = KafkaPythonSubscription.decode(encode_subscription(subscription, version))
    assert list(decoded.topics) == sorted(subscription.topics)
    assert decoded.user_data == subscription.user_data
    if version >= 1:
        assert sorted(
            TopicPartition(tp.topic, p) for tp in decoded.owned_partitions for p in tp.partitions
        ) == sorted(subscription.owned_partitions)


def test_reads_kafka_python_assignments() -> None:
    for version in range(LATEST_VERSION + 1):
        data = KafkaPythonAssignment(
            version=version, assigned_partitions=[("a", [2, 0]), ("b", [1])], user_data=b""
        ).encode()
        assert decode_assignment(data) == Assignment(
            [TopicPartition("a", 2), TopicPartition("a", 0), TopicPartition("b", 1)], b""
        )
