"""A Produce's records read in place (a writable view of the request) are
stamped where they lie; any other payload is stamped in a copy, the caller's
bytes untouched."""

from __future__ import annotations

import struct

from kgroups.partitions.config import LogConfig
from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.partitions.stamping import StampedBatches, StampingLog, stamp
from kgroups.records.batch import encode_batch


class _Log(StampingLog):
    def __init__(self) -> None:
        self.config = LogConfig()
        self.producers = ProducerStateManager()
        self.leader_epoch = 7

    @property
    def log_start_offset(self) -> int:
        return 0


def _batches() -> bytes:
    first = encode_batch([(None, b"a", (), 1), (None, b"b", (), 2)])
    return first + encode_batch([(None, b"c", (), 3)])


def test_a_writable_view_is_stamped_in_place() -> None:
    frame = bytearray(b"head" + _batches())
    records = memoryview(frame)[4:]
    stamped = stamp(_Log(), records, 40, 0, from_client=True)
    assert isinstance(stamped, StampedBatches)
    assert stamped.buf is records
    second = 4 + stamped.metas[1][0]
    assert struct.unpack_from(">q", frame, 4)[0] == 40
    assert struct.unpack_from(">i", frame, 4 + 12)[0] == 7  # the leader epoch
    assert struct.unpack_from(">q", frame, second)[0] == 42


def test_bytes_and_read_only_views_are_stamped_in_a_copy() -> None:
    payload = _batches()
    for given in (payload, memoryview(payload), memoryview(bytearray(payload)).toreadonly()):
        stamped = stamp(_Log(), given, 40, 0, from_client=True)
        assert isinstance(stamped, StampedBatches)
        assert struct.unpack_from(">q", stamped.buf, 0)[0] == 40
        assert bytes(given) == payload
