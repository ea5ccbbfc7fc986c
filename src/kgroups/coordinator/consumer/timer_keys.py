"""The keys of a consumer group's timers: a member's session, its rebalance
timeout while it revokes partitions, a classic-protocol member's join."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache


@dataclass(frozen=True, slots=True)
class ConsumerTimerKey:
    kind: str  # SESSION, REBALANCE or CLASSIC_JOIN
    group_id: str
    member_id: str
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.kind, self.group_id, self.member_id)))

    def __hash__(self) -> int:
        return self._hash


SESSION = "session"
REBALANCE = "rebalance"
CLASSIC_JOIN = "classic-join"
"""A classic-protocol member told to rejoin (or that joined) must send its
JoinGroup (or SyncGroup) within its rebalance timeout."""


@lru_cache(maxsize=65536)
def session_key(group_id: str, member_id: str) -> ConsumerTimerKey:
    """One key object per member, so the timer queue finds it by identity
    at each heartbeat instead of comparing fields."""
    return ConsumerTimerKey(SESSION, group_id, member_id)
