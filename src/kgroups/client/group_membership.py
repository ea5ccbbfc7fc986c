"""A member's standing in its group: the generation it joined, and where it is in a
rebalance (the Java client's Generation and MemberState)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["NO_GENERATION", "Generation", "MemberState"]


@dataclass(frozen=True, slots=True)
class Generation:
    generation_id: int
    member_id: str
    protocol_name: str | None

    @property
    def has_member_id(self) -> bool:
        return self.member_id != ""


NO_GENERATION = Generation(-1, "", None)


class MemberState(enum.Enum):
    UNJOINED = "unjoined"
    """Not in the group: before the first join, after leaving, or after the
    coordinator said our membership is gone."""
    PREPARING_REBALANCE = "preparing-rebalance"
    """JoinGroup sent, waiting for the other members."""
    COMPLETING_REBALANCE = "completing-rebalance"
    """Joined; waiting for the assignment in the SyncGroup response."""
    STABLE = "stable"
    """Assignment received; consuming and heartbeating."""

    @property
    def has_not_joined(self) -> bool:
        return self in (MemberState.UNJOINED, MemberState.PREPARING_REBALANCE)
