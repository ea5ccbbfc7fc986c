"""Transaction markers: the control batch that ends a producer's transaction.

Kafka's format: a batch with the control and transactional attribute bits, the
producer's id and epoch, no sequence (-1), holding one record whose key is
version int16 (0) + type int16 (0 abort, 1 commit) and whose value is version
int16 (0) + the transaction coordinator's epoch int32.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kgroups.records.batch import decode_records, encode_batch

__all__ = ["ABORT", "COMMIT", "Marker", "encode_marker", "read_marker"]

ABORT = 0
COMMIT = 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class Marker(NamedTuple):
    commit: bool
    coordinator_epoch: int


def encode_marker(
    producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, timestamp: int
) -> bytes:
    key = _KEY.pack(0, COMMIT if commit else ABORT)
    value = _VALUE.pack(0, coordinator_epoch)
    return encode_batch(
        [(key, value, (), timestamp)],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
    )


def read_marker(batch: bytes | bytearray | memoryview) -> Marker | None:
    """The marker in a control batch; None for other control records."""
    records = decode_records(batch)
    if not records or records[0].key is None or len(records[0].key) < _KEY.size:
        return None
    _version, kind = _KEY.unpack_from(records[0].key)
    if kind not in (ABORT, COMMIT):
        return None
    value = records[0].value or b""
    epoch = _VALUE.unpack_from(value)[1] if len(value) >= _VALUE.size else -1
    return Marker(kind == COMMIT, epoch)
