"""Which not yet durable coordinator writes a reply has to wait for.

A reply may leave once the records it reveals are durable. What it reveals is
the state it read: a group's membership (stored in its GroupMetadata record)
or a group's offsets (its OffsetCommit records). So a heartbeat waits for its
own group's pending membership write, but never for a commit, nor for
another group's writes: one stuck fsync cannot hold every reply of a
partition. A reply whose reach is not known waits for everything pending.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Generic, TypeVar

from kgroups.protocol import apis

# What a piece of state is: (group id, MEMBERS or OFFSETS).
MEMBERS = 0
OFFSETS = 1
StateKey = tuple[str, int]
# A reach that is not known: everything.
EVERYTHING: None = None
Reach = tuple[StateKey, ...] | None
# Whatever stands for one pending write.
W = TypeVar("W")

_MEMBERSHIP_APIS = frozenset(
    (
        apis.JOIN_GROUP,
        apis.SYNC_GROUP,
        apis.HEARTBEAT,
        apis.LEAVE_GROUP,
        apis.CONSUMER_GROUP_HEARTBEAT,
        apis.SHARE_GROUP_HEARTBEAT,
    )
)
_OFFSET_APIS = frozenset(
    (apis.OFFSET_COMMIT, apis.OFFSET_FETCH, apis.OFFSET_DELETE, apis.TXN_OFFSET_COMMIT)
)


def request_reach(group_id: str, api_key: int) -> Reach:
    """The state a group request reads or writes."""
    if api_key in _MEMBERSHIP_APIS:
        return ((group_id, MEMBERS),)
    if api_key in _OFFSET_APIS:
        return ((group_id, MEMBERS), (group_id, OFFSETS))
    return EVERYTHING


def written(records: Iterable[tuple[bytes, bytes | None]]) -> set[StateKey]:
    """The state the records store."""
    return {_stored_by(key) for key, _value in records}


@lru_cache(maxsize=65536)  # a committer writes the same keys again and again
def _stored_by(key: bytes) -> StateKey:
    """Every group coordinator key starts with its version (int16: 0 and 1
    offsets; 2 a classic group's membership, 3 to 16 a consumer group's) and
    the group id."""
    version = int.from_bytes(key[0:2], "big", signed=True)
    size = int.from_bytes(key[2:4], "big", signed=True)
    group = key[4 : 4 + size].decode()
    return group, OFFSETS if version in (0, 1) else MEMBERS


class PendingWrites(Generic[W]):
    """One partition's last unsettled writer of each piece of state.

    A writer settles once its records, and every write it waited for, are
    durable (or failed).
    """

    def __init__(self) -> None:
        self._last: dict[StateKey, W] = {}

    def __bool__(self) -> bool:
        return bool(self._last)

    def before(self, reach: Reach) -> list[W]:
        """The writes a result of this reach waits for."""
        if reach is EVERYTHING:
            return list({id(w): w for w in self._last.values()}.values())
        found = {id(w): w for w in (self._last.get(k) for k in reach) if w is not None}
        return list(found.values())

    def add(self, keys: Iterable[StateKey], writer: W) -> None:
        for key in keys:
            self._last[key] = writer

    def settled(self, keys: Iterable[StateKey], writer: W) -> None:
        for key in keys:
            if self._last.get(key) is writer:
                del self._last[key]
