"""A coordinator's batch of keyed records (``encode_keyed_batch``) is the
very batch ``encode_batch`` writes for them, and reads back as written."""

from __future__ import annotations

import pytest

from kgroups.records.batch import encode_batch, encode_keyed_batch, iter_key_values

NOW = 1_765_000_000_123


def _general(records: list[tuple[bytes, bytes | None]]) -> bytes:
    return encode_batch([(key, value, (), NOW) for key, value in records])


@pytest.mark.parametrize(
    "records",
    [
        [(b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00", b"\x00\x03" + bytes(22))],
        [(b"key-%d" % i, b"value" * (i % 7)) for i in range(300)],
        [(b"k", None), (b"k2", b""), (b"x" * 5000, b"y" * 70_000)],
        [(b"k%d" % i, b"v") for i in range(4096)],
        [(b"k%d" % i, b"v") for i in range(4097)],
    ],
    ids=["one-offset", "many", "tombstone-empty-large", "most-deltas", "past-the-table"],
)
def test_the_same_bytes_as_encode_batch(records: list[tuple[bytes, bytes | None]]) -> None:
    batch = encode_keyed_batch(records, NOW)
    assert batch == _general(records)
    assert iter_key_values(batch) == records
