import struct

import pytest

from kgroups.coordinator.record_codec import RecordFormatError
from kgroups.transactions.records import (
    TransactionLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for_transactional_id,
)
from kgroups.transactions.state import TxnState


def test_key_is_kafkas_v0_key() -> None:
    assert encode_key("txn-1") == b"\x00\x00\x00\x05txn-1"
    assert decode_key(b"\x00\x00\x00\x05txn-1") == "txn-1"


def test_a_key_of_an_unknown_version_is_refused() -> None:
    with pytest.raises(RecordFormatError):
        decode_key(b"\x00\x01\x00\x01t")


def test_value_v0_is_kafkas_layout() -> None:
    value = TransactionLogValue(
        producer_id=7,
        producer_epoch=3,
        timeout_ms=60000,
        state=TxnState.ONGOING.byte,
        partitions=frozenset({("b", 1), ("a", 2), ("a", 0)}),
        last_update_timestamp_ms=1000,
        start_timestamp_ms=900,
    )
    expected = (
        struct.pack(">hqhib", 0, 7, 3, 60000, 1)
        + struct.pack(">i", 2)
        + struct.pack(">h", 1) + b"a" + struct.pack(">iii", 2, 0, 2)
        + struct.pack(">h", 1) + b"b" + struct.pack(">ii", 1, 1)
        + struct.pack(">qq", 1000, 900)
    )  # fmt: skip
    assert encode_value(value) == expected
    assert decode_value(expected) == value


def test_an_empty_state_is_stored_without_partitions() -> None:
    value = TransactionLogValue(5, 0, 60000, TxnState.EMPTY.byte, None, 10, -1)
    encoded = encode_value(value)
    assert encoded == struct.pack(">hqhibiqq", 0, 5, 0, 60000, 0, -1, 10, -1)
    assert decode_value(encoded).partitions is None


def test_value_v1_is_flexible_with_the_producer_ids_in_tagged_fields() -> None:
    value = TransactionLogValue(
        producer_id=8,
        producer_epoch=0,
        timeout_ms=1000,
        state=TxnState.PREPARE_COMMIT.byte,
        partitions=frozenset({("t", 4)}),
        last_update_timestamp_ms=5,
        start_timestamp_ms=4,
        previous_producer_id=7,
        next_producer_id=9,
        client_transaction_version=2,
    )
    expected = (
        struct.pack(">hqhib", 1, 8, 0, 1000, 2)
        + bytes([2, 2]) + b"t" + bytes([2]) + struct.pack(">i", 4) + bytes([0])
        + struct.pack(">qq", 5, 4)
        + bytes([3, 0, 8]) + struct.pack(">q", 7)
        + bytes([1, 8]) + struct.pack(">q", 9)
        + bytes([2, 2]) + struct.pack(">h", 2)
    )  # fmt: skip
    assert encode_value(value, version=1) == expected
    assert decode_value(expected) == value


def test_a_value_of_an_unknown_version_is_refused() -> None:
    with pytest.raises(RecordFormatError):
        decode_value(struct.pack(">hqhibiqq", 2, 5, 0, 60000, 0, -1, 10, -1))


def test_a_transactional_id_is_placed_by_its_java_hash_code() -> None:
    # "hello".hashCode() == 99162322 in Java; a negative hash is made positive.
    assert partition_for_transactional_id("hello", 50) == 99162322 % 50
    assert partition_for_transactional_id("polygenelubricants", 50) == 0  # Integer.MIN_VALUE
