"""The states of a classic group and the only transitions between them.

Theory of operation
-------------------
A classic group moves through *generations*. Members join (JoinGroup), the
coordinator waits until every known member has rejoined or the rebalance
timeout passes, then starts a new generation: it picks the protocol, names
a leader and answers every parked JoinGroup. The leader computes the
assignment and sends it in its SyncGroup; the coordinator stores the group
(one GroupMetadata record) and answers every member's SyncGroup with its
share. From then on members heartbeat until something — a new member, a
leaving or silent member, a changed subscription, the leader rejoining —
starts the next rebalance.

::

                   join                      all joined / timeout
        Empty ──────────────▶ PreparingRebalance ──────────────▶ CompletingRebalance
          ▲                     │    ▲        ▲                      │
          │ nobody rejoined     │    │        │ join, leave, member  │ leader's
          └─────────────────────┘    │        │ lost, sync timeout   │ SyncGroup stored
                                     │        └──────────────────────┤
                                     │   join by leader or with      ▼
                                     └── new metadata, leave, ─── Stable
                                         member lost

    Any state ──▶ Dead when the group is deleted or its offsets all expire
    while Empty (the group then disappears).

Only the transitions in ``_ALLOWED_PREVIOUS`` are legal; anything else is a
bug and raises :class:`IllegalTransition`. ``ANSWERS`` says how each state
answers a member's JoinGroup, SyncGroup, Heartbeat and LeaveGroup: an error
code, or the :class:`Rule` the request's handler applies. The handlers look
their answers up there, so it is the single place to look when asking "what
happens if X arrives now?"; each state's docstring adds what the table does
not hold (new members, offset commits).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from kio.schema.errors import ErrorCode


class IllegalTransition(RuntimeError):
    """A state change the table below does not allow."""


class GroupState(enum.Enum):
    EMPTY = "Empty"
    """No members; the group may still hold committed offsets.

    JoinGroup:    a new member (no member id) is accepted and starts a rebalance
                  after group.initial.rebalance.delay.ms.
    OffsetCommit: accepted from anyone with generation -1 (simple commits and
                  admin tools); otherwise member and generation are checked.
    """

    PREPARING_REBALANCE = "PreparingRebalance"
    """Waiting for every member to rejoin.

    JoinGroup:    a new member is parked like the known ones.
    OffsetCommit: accepted from members of the previous generation.
    """

    COMPLETING_REBALANCE = "CompletingRebalance"
    """Join phase done; waiting for the leader's assignment.

    JoinGroup:    a new member starts a new rebalance.
    OffsetCommit: REBALANCE_IN_PROGRESS.
    """

    STABLE = "Stable"
    """Assignment stored; members consume.

    JoinGroup:    a new member starts a rebalance. A known static member
                  rejoining with a new member id replaces the old id without
                  one (unless the chosen protocol would change).
    OffsetCommit: accepted from members of the current generation.
    """

    DEAD = "Dead"
    """Being removed; never seen by requests since it leaves the table at once.

    OffsetCommit: COORDINATOR_NOT_AVAILABLE.
    """

    def __str__(self) -> str:
        return self.value

    @property
    def lower_name(self) -> str:
        return self.value.lower()


_ALLOWED_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


def can_transition(source: GroupState, target: GroupState) -> bool:
    return source in _ALLOWED_PREVIOUS[target]


def check_transition(source: GroupState, target: GroupState) -> None:
    if not can_transition(source, target):
        raise IllegalTransition(f"a group cannot go from {source} to {target}")


class Request(enum.Enum):
    """The requests of a group's members whose answer depends on its state."""

    JOIN_GROUP = "JoinGroup"  # by a member the group knows
    SYNC_GROUP = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    LEAVE_GROUP = "LeaveGroup"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Rule:
    """An answer the request's handler computes: the handler names the function
    that applies it; ``does`` says what it does."""

    name: str
    does: str


# JoinGroup
PARK_JOIN = Rule(
    "park_join", "parked until all known members have joined or the rebalance timeout passes"
)
REJOIN_IF_CHANGED = Rule(
    "rejoin_if_changed",
    "unchanged metadata gets the current generation again; changed metadata starts a new rebalance",
)
REJOIN_IF_LEADER_OR_CHANGED = Rule(
    "rejoin_if_leader_or_changed",
    "a follower with unchanged metadata gets the current generation without a "
    "rebalance; the leader or changed metadata starts a rebalance",
)
# SyncGroup
PARK_SYNC = Rule(
    "park_sync",
    "parked until the leader's assignment is stored; the leader's SyncGroup "
    "stores it and moves the group to Stable",
)
SEND_ASSIGNMENT = Rule("send_assignment", "answered at once with the member's assignment")
# Heartbeat
KEEP_ALIVE = Rule("keep_alive", "NONE, and the session is kept alive")
KEEP_ALIVE_IN_REBALANCE = Rule(
    "keep_alive_in_rebalance", "REBALANCE_IN_PROGRESS, and the session is kept alive"
)
# LeaveGroup (and a member whose session expired)
REMOVE_AND_REBALANCE = Rule("remove_and_rebalance", "removes the member and starts a new rebalance")
REMOVE_AND_COMPLETE_JOIN = Rule(
    "remove_and_complete_join", "removes the member; may complete the join phase"
)

# What a member's request gets in each state, once the request itself was
# found valid (group id, member id, generation). Dead groups leave the table
# at once, so requests see them only as groups that do not exist.
ANSWERS: dict[Request, dict[GroupState, ErrorCode | Rule]] = {
    Request.JOIN_GROUP: {
        GroupState.EMPTY: ErrorCode.unknown_member_id,
        GroupState.PREPARING_REBALANCE: PARK_JOIN,
        GroupState.COMPLETING_REBALANCE: REJOIN_IF_CHANGED,
        GroupState.STABLE: REJOIN_IF_LEADER_OR_CHANGED,
        GroupState.DEAD: ErrorCode.coordinator_not_available,
    },
    Request.SYNC_GROUP: {
        GroupState.EMPTY: ErrorCode.unknown_member_id,
        GroupState.PREPARING_REBALANCE: ErrorCode.rebalance_in_progress,
        GroupState.COMPLETING_REBALANCE: PARK_SYNC,
        GroupState.STABLE: SEND_ASSIGNMENT,
        GroupState.DEAD: ErrorCode.coordinator_not_available,
    },
    Request.HEARTBEAT: {
        GroupState.EMPTY: ErrorCode.unknown_member_id,
        GroupState.PREPARING_REBALANCE: KEEP_ALIVE_IN_REBALANCE,
        GroupState.COMPLETING_REBALANCE: KEEP_ALIVE,
        GroupState.STABLE: KEEP_ALIVE,
        GroupState.DEAD: ErrorCode.coordinator_not_available,
    },
    Request.LEAVE_GROUP: {
        GroupState.EMPTY: ErrorCode.unknown_member_id,
        GroupState.PREPARING_REBALANCE: REMOVE_AND_COMPLETE_JOIN,
        GroupState.COMPLETING_REBALANCE: REMOVE_AND_REBALANCE,
        GroupState.STABLE: REMOVE_AND_REBALANCE,
        GroupState.DEAD: ErrorCode.coordinator_not_available,
    },
}

_Apply = TypeVar("_Apply")


def answers_by_state(
    request: Request, rules: Mapping[Rule, _Apply]
) -> dict[GroupState, ErrorCode | _Apply]:
    """The request's row of ``ANSWERS`` with each rule replaced by the function
    that applies it; every rule of the row must have one, and no other."""
    row = ANSWERS[request]
    named = {answer for answer in row.values() if isinstance(answer, Rule)}
    if named != set(rules):
        raise ValueError(f"{request} applies {sorted(r.name for r in rules)}, not those of its row")
    return {
        state: rules[answer] if isinstance(answer, Rule) else answer
        for state, answer in row.items()
    }
