"""Transaction markers as Kafka writes them: the one record of a control batch.

Key: version 0 (int16), then the type (int16: 0 abort, 1 commit). Value:
version 0 (int16), then the transaction coordinator's epoch (int32).
"""

from __future__ import annotations

import struct

from kgroups.coordinator.result import Record

ABORT = 0
COMMIT = 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def control_record(commit: bool, coordinator_epoch: int) -> Record:
    return _KEY.pack(0, COMMIT if commit else ABORT), _VALUE.pack(0, coordinator_epoch)


def marker_commits(key: bytes) -> bool | None:
    """True for a commit marker's key, False for an abort's, None for another control record."""
    if len(key) < _KEY.size:
        return None
    _version, kind = _KEY.unpack_from(key)
    if kind == COMMIT:
        return True
    if kind == ABORT:
        return False
    return None
