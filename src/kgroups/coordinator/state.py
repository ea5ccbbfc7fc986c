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
answers a member's JoinGroup (and whether group.max.size refuses a join),
SyncGroup, Heartbeat and LeaveGroup, and OffsetCommit, OffsetFetch,
OffsetDelete and DeleteGroups: an error code, or the :class:`Rule` the
request's handler applies. The handlers look their answers up there, so it
is the single place to look when asking "what happens if X arrives now?";
each state's docstring adds what the table does not hold (new members).
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

    JoinGroup: a new member (no member id) is accepted and starts a rebalance
               after group.initial.rebalance.delay.ms.
    """

    PREPARING_REBALANCE = "PreparingRebalance"
    """Waiting for every member to rejoin.

    JoinGroup: a new member is parked like the known ones.
    """

    COMPLETING_REBALANCE = "CompletingRebalance"
    """Join phase done; waiting for the leader's assignment.

    JoinGroup: a new member starts a new rebalance.
    """

    STABLE = "Stable"
    """Assignment stored; members consume.

    JoinGroup: a new member starts a rebalance.
    """

    DEAD = "Dead"
    """Removed: deleted, or Empty when its last offsets went, or its tombstone loaded.

    A group is Dead only between its removal and the table dropping it, in
    the same step, so no request ever finds one. A client sees a group id
    the table does not hold, which the Dead column of ``ANSWERS`` answers:
    UNKNOWN_MEMBER_ID to a member's JoinGroup, SyncGroup, Heartbeat and
    LeaveGroup; GROUP_ID_NOT_FOUND to a member's OffsetCommit v9+ and
    ILLEGAL_GENERATION to v8 and older, as Kafka 4.x (one with generation -1
    creates the group anew, as a new member's JoinGroup does);
    no offsets to OffsetFetch; GROUP_ID_NOT_FOUND to OffsetDelete and
    DeleteGroups. DescribeGroups shows such a group as Dead.
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
    """The requests whose answer depends on the group's state."""

    JOIN_GROUP = "JoinGroup"  # by a member the group knows
    JOIN_AT_MAX_SIZE = "JoinGroup while group.max.size is reached"
    STATIC_REJOIN = "JoinGroup of a known group.instance.id without its member id"
    SYNC_GROUP = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    LEAVE_GROUP = "LeaveGroup"
    OFFSET_COMMIT = "OffsetCommit"  # by a member: generation 0 or more
    SIMPLE_OFFSET_COMMIT = "OffsetCommit with generation -1"
    OFFSET_FETCH = "OffsetFetch"
    OFFSET_DELETE = "OffsetDelete"
    DELETE_GROUPS = "DeleteGroups"

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
# JoinGroup while group.max.size is reached: GROUP_MAX_SIZE_REACHED, unless
ALWAYS_ACCEPT = Rule("always_accept", "never refused: the group has no members")
COUNT_PARKED_JOINS = Rule(
    "count_parked_joins",
    "its member's join is parked already; counting parked joins, not members, "
    "sheds the members that rejoin last when group.max.size was lowered",
)
COUNT_MEMBERS = Rule(
    "count_members",
    "it is a member's; members that do not rejoin are dropped when the join phase completes",
)
# JoinGroup of a restarted static member: its old member id is fenced and replaced
REPLACE_AND_PARK = Rule("replace_and_park", "parked with the other joins")
REPLACE_AND_REBALANCE = Rule(
    "replace_and_rebalance",
    "starts a new rebalance: the leader may be assigning to the old member id",
)
REPLACE_AND_KEEP_GENERATION = Rule(
    "replace_and_keep_generation",
    "if the chosen protocol stays, the new id is stored and the current generation "
    "answered without a rebalance; otherwise a rebalance starts",
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
# OffsetCommit
STORE_AND_KEEP_ALIVE = Rule(
    "store_and_keep_alive", "stored; the commit keeps the member's session alive, like a heartbeat"
)
STORE_OFFSETS = Rule("store_offsets", "stored, whoever sends them (simple consumers, admin tools)")
CREATE_AND_STORE = Rule("create_and_store", "stored in a new Empty group")
NOT_FOUND_FROM_V9 = Rule(
    "not_found_from_v9",
    "GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before (Kafka 4.x; older clients expect it)",
)
MEMBERS_ONLY = Rule(
    "members_only",
    "only members commit to a group that has them: ILLEGAL_GENERATION for a member, "
    "FENCED_INSTANCE_ID for a stale static member, UNKNOWN_MEMBER_ID for anyone else",
)
# OffsetFetch
READ_OFFSETS = Rule("read_offsets", "the committed offsets; -1 for a partition without one")
# OffsetDelete
DELETE_OFFSETS = Rule("delete_offsets", "every offset asked for is deleted")
DELETE_UNSUBSCRIBED_OFFSETS = Rule(
    "delete_unsubscribed_offsets",
    "a consumer group's offsets of topics it is not subscribed to are deleted, the others "
    "get GROUP_SUBSCRIBED_TO_TOPIC; a group of another protocol type: NON_EMPTY_GROUP",
)
# DeleteGroups
DELETE_GROUP = Rule("delete_group", "the group and its offsets are deleted")

# What each request gets in each state, once the request itself was found
# valid (group id; member id and generation for the requests of a member).
# The Dead column is what a group id the table does not hold gets: a Dead
# group has left the table already. A row lists only the states its request
# can meet.
ANSWERS: dict[Request, dict[GroupState, ErrorCode | Rule]] = {
    Request.JOIN_GROUP: {
        GroupState.EMPTY: ErrorCode.unknown_member_id,
        GroupState.PREPARING_REBALANCE: PARK_JOIN,
        GroupState.COMPLETING_REBALANCE: REJOIN_IF_CHANGED,
        GroupState.STABLE: REJOIN_IF_LEADER_OR_CHANGED,
        GroupState.DEAD: ErrorCode.unknown_member_id,
    },
    Request.JOIN_AT_MAX_SIZE: {  # by any member, new or known (Kafka's acceptJoiningMember)
        GroupState.EMPTY: ALWAYS_ACCEPT,
        GroupState.PREPARING_REBALANCE: COUNT_PARKED_JOINS,
        GroupState.COMPLETING_REBALANCE: COUNT_MEMBERS,
        GroupState.STABLE: COUNT_MEMBERS,
        GroupState.DEAD: ALWAYS_ACCEPT,  # the group is created anew
    },
    # Only a group with members knows a static member (Kafka's
    # updateStaticMemberAndRebalance).
    Request.STATIC_REJOIN: {
        GroupState.PREPARING_REBALANCE: REPLACE_AND_PARK,
        GroupState.COMPLETING_REBALANCE: REPLACE_AND_REBALANCE,
        GroupState.STABLE: REPLACE_AND_KEEP_GENERATION,
    },
    Request.SYNC_GROUP: {
        GroupState.EMPTY: ErrorCode.unknown_member_id,
        GroupState.PREPARING_REBALANCE: ErrorCode.rebalance_in_progress,
        GroupState.COMPLETING_REBALANCE: PARK_SYNC,
        GroupState.STABLE: SEND_ASSIGNMENT,
        GroupState.DEAD: ErrorCode.unknown_member_id,
    },
    Request.HEARTBEAT: {
        GroupState.EMPTY: ErrorCode.unknown_member_id,
        GroupState.PREPARING_REBALANCE: KEEP_ALIVE_IN_REBALANCE,
        GroupState.COMPLETING_REBALANCE: KEEP_ALIVE,
        GroupState.STABLE: KEEP_ALIVE,
        GroupState.DEAD: ErrorCode.unknown_member_id,
    },
    Request.LEAVE_GROUP: {  # each member's answer
        GroupState.EMPTY: ErrorCode.unknown_member_id,
        GroupState.PREPARING_REBALANCE: REMOVE_AND_COMPLETE_JOIN,
        GroupState.COMPLETING_REBALANCE: REMOVE_AND_REBALANCE,
        GroupState.STABLE: REMOVE_AND_REBALANCE,
        GroupState.DEAD: ErrorCode.unknown_member_id,
    },
    Request.OFFSET_COMMIT: {  # each partition's answer
        GroupState.EMPTY: ErrorCode.unknown_member_id,
        # Kafka relies on the heartbeat to tell the member of the rebalance.
        GroupState.PREPARING_REBALANCE: STORE_AND_KEEP_ALIVE,
        # The member has its new generation but not its assignment yet.
        GroupState.COMPLETING_REBALANCE: ErrorCode.rebalance_in_progress,
        GroupState.STABLE: STORE_AND_KEEP_ALIVE,
        # A member of a generation the coordinator never saw: its group is gone.
        GroupState.DEAD: NOT_FOUND_FROM_V9,
    },
    Request.SIMPLE_OFFSET_COMMIT: {  # each partition's answer
        GroupState.EMPTY: STORE_OFFSETS,
        GroupState.PREPARING_REBALANCE: MEMBERS_ONLY,
        GroupState.COMPLETING_REBALANCE: MEMBERS_ONLY,
        GroupState.STABLE: MEMBERS_ONLY,
        GroupState.DEAD: CREATE_AND_STORE,
    },
    Request.OFFSET_FETCH: {  # simple consumers' groups have no members
        GroupState.EMPTY: READ_OFFSETS,
        GroupState.PREPARING_REBALANCE: READ_OFFSETS,
        GroupState.COMPLETING_REBALANCE: READ_OFFSETS,
        GroupState.STABLE: READ_OFFSETS,
        GroupState.DEAD: READ_OFFSETS,
    },
    Request.OFFSET_DELETE: {
        GroupState.EMPTY: DELETE_OFFSETS,
        GroupState.PREPARING_REBALANCE: DELETE_UNSUBSCRIBED_OFFSETS,
        GroupState.COMPLETING_REBALANCE: DELETE_UNSUBSCRIBED_OFFSETS,
        GroupState.STABLE: DELETE_UNSUBSCRIBED_OFFSETS,
        GroupState.DEAD: ErrorCode.group_id_not_found,
    },
    Request.DELETE_GROUPS: {  # each group's answer
        GroupState.EMPTY: DELETE_GROUP,
        GroupState.PREPARING_REBALANCE: ErrorCode.non_empty_group,
        GroupState.COMPLETING_REBALANCE: ErrorCode.non_empty_group,
        GroupState.STABLE: ErrorCode.non_empty_group,
        GroupState.DEAD: ErrorCode.group_id_not_found,
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


def rules_by_state(request: Request, rules: Mapping[Rule, _Apply]) -> dict[GroupState, _Apply]:
    """``answers_by_state`` of a row that holds rules only."""
    applied = {}
    for state, answer in answers_by_state(request, rules).items():
        if isinstance(answer, ErrorCode):
            raise ValueError(f"{request} answers {answer.name} in {state}, not a rule")
        applied[state] = answer
    return applied


def answer_without_group(request: Request) -> ErrorCode:
    """What the request gets for a group id the table does not hold: its Dead cell."""
    answer = ANSWERS[request][GroupState.DEAD]
    if not isinstance(answer, ErrorCode):
        raise ValueError(f"{request} applies {answer.name} without a group, not an error code")
    return answer
