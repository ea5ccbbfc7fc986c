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
bug and raises :class:`IllegalTransition`. Each state's docstring below says
how it answers the membership requests — this table and those notes are the
single place to look when asking "what happens if X arrives now?".
"""

from __future__ import annotations

import enum


class IllegalTransition(RuntimeError):
    """A state change the table below does not allow."""


class GroupState(enum.Enum):
    EMPTY = "Empty"
    """No members; the group may still hold committed offsets.

    JoinGroup:    a new member (no member id) is accepted and starts a rebalance
                  after group.initial.rebalance.delay.ms; a known member id
                  gets UNKNOWN_MEMBER_ID.
    SyncGroup:    UNKNOWN_MEMBER_ID.
    Heartbeat:    UNKNOWN_MEMBER_ID.
    LeaveGroup:   UNKNOWN_MEMBER_ID for each member.
    OffsetCommit: accepted from anyone with generation -1 (simple commits and
                  admin tools); otherwise member and generation are checked.
    """

    PREPARING_REBALANCE = "PreparingRebalance"
    """Waiting for every member to rejoin.

    JoinGroup:    parked until all known members have joined or the
                  rebalance timeout passes.
    SyncGroup:    REBALANCE_IN_PROGRESS.
    Heartbeat:    REBALANCE_IN_PROGRESS (and the session is kept alive).
    LeaveGroup:   removes the member; may complete the join phase.
    OffsetCommit: accepted from members of the previous generation.
    """

    COMPLETING_REBALANCE = "CompletingRebalance"
    """Join phase done; waiting for the leader's assignment.

    JoinGroup:    unchanged metadata gets the current generation again; new
                  members or changed metadata start a new rebalance.
    SyncGroup:    parked until the leader's assignment is stored; the
                  leader's SyncGroup stores it and moves the group to Stable.
    Heartbeat:    NONE (members heartbeat while waiting for their assignment).
    LeaveGroup:   removes the member and starts a new rebalance.
    OffsetCommit: REBALANCE_IN_PROGRESS.
    """

    STABLE = "Stable"
    """Assignment stored; members consume.

    JoinGroup:    a follower with unchanged metadata gets the current
                  generation without a rebalance; the leader, a follower with
                  changed metadata or a new member starts a rebalance. A known
                  static member rejoining with a new member id replaces the old
                  id without one (unless the chosen protocol would change).
    SyncGroup:    answered at once with the member's assignment.
    Heartbeat:    NONE.
    LeaveGroup:   removes the member and starts a new rebalance.
    OffsetCommit: accepted from members of the current generation.
    """

    DEAD = "Dead"
    """Being removed; never seen by requests since it leaves the table at once.

    JoinGroup, SyncGroup, Heartbeat, LeaveGroup: COORDINATOR_NOT_AVAILABLE.
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
