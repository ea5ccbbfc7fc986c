"""JoinGroup: new, known and static members joining a classic group.

A join that cannot be answered yet is parked on its member until the join
phase completes (see rebalance.py).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from kio.schema.errors import ErrorCode
from kio.schema.join_group.v9.request import JoinGroupRequest
from kio.schema.join_group.v9.response import JoinGroupResponse

from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.current_member import validate_current_member
from kgroups.coordinator.delayed_operations import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    MemberDeadline,
    Timers,
    member_key,
)
from kgroups.coordinator.effects import Effects
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.group_records import group_metadata_record, group_metadata_value
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.member import Member, Protocols
from kgroups.coordinator.parked_requests import answer_parked
from kgroups.coordinator.rebalance import Rebalance, generation_answer, member_list
from kgroups.coordinator.responses import (
    UNKNOWN_MEMBER_ID,
    join_error,
)
from kgroups.coordinator.state import (
    ALWAYS_ACCEPT,
    COUNT_MEMBERS,
    COUNT_PARKED_JOINS,
    PARK_JOIN,
    REJOIN_IF_CHANGED,
    REJOIN_IF_LEADER_OR_CHANGED,
    REPLACE_AND_KEEP_GENERATION,
    REPLACE_AND_PARK,
    REPLACE_AND_REBALANCE,
    GroupState,
    Request,
    answer_without_group,
    answers_by_state,
    rules_by_state,
)
from kgroups.coordinator.turn import Turn
from kgroups.protocol.strings import fit

# JoinGroup v4 introduced the two-step join: a member without an id is
# handed one with MEMBER_ID_REQUIRED and must join again with it (KIP-394).
_MEMBER_ID_REQUIRED_VERSION = 4
# JoinGroup v9 lets a rejoining static leader skip the assignment (KIP-814).
_SKIP_ASSIGNMENT_VERSION = 9

_ONE_MS = datetime.timedelta(milliseconds=1)


def _millis(value: datetime.timedelta) -> int:
    return value // _ONE_MS


class JoinGroupHandler:
    def __init__(
        self,
        table: GroupTable,
        timers: Timers,
        config: CoordinatorConfig,
        new_member_id: Callable[[str], str],
        rebalance: Rebalance,
    ) -> None:
        self._table = table
        self._timers = timers
        self._config = config
        self._new_member_id = new_member_id
        self._rebalance = rebalance
        self._answers = answers_by_state(
            Request.JOIN_GROUP,
            {
                PARK_JOIN: self._update_member_and_rebalance,
                REJOIN_IF_CHANGED: self._rejoin_if_changed,
                REJOIN_IF_LEADER_OR_CHANGED: self._rejoin_if_leader_or_changed,
            },
        )
        self._max_size_checks = rules_by_state(
            Request.JOIN_AT_MAX_SIZE,
            {
                ALWAYS_ACCEPT: _always_accept,
                COUNT_PARKED_JOINS: self._below_max_parked_joins,
                COUNT_MEMBERS: self._below_max_members,
            },
        )
        self._static_rejoins = rules_by_state(
            Request.STATIC_REJOIN,
            {
                REPLACE_AND_PARK: _keep_parked,
                REPLACE_AND_REBALANCE: self._rebalance_for_new_id,
                REPLACE_AND_KEEP_GENERATION: self._keep_generation,
            },
        )

    def join_group(self, req: JoinGroupRequest, ctx: RequestContext, turn: Turn) -> None:
        version = ctx.api_version
        member_id = req.member_id
        if not req.group_id:
            turn.fx.reply(ctx.reply_to, join_error(version, ErrorCode.invalid_group_id, member_id))
            return
        session_timeout = _millis(req.session_timeout)
        # JoinGroup v0 had no rebalance timeout: the session timeout served.
        rebalance_timeout = session_timeout if version == 0 else _millis(req.rebalance_timeout)
        if not (
            self._config.min_session_timeout_ms
            <= session_timeout
            <= self._config.max_session_timeout_ms
        ):
            turn.fx.reply(
                ctx.reply_to, join_error(version, ErrorCode.invalid_session_timeout, member_id)
            )
            return

        is_new_member = member_id == UNKNOWN_MEMBER_ID
        group = self._table.get(req.group_id)
        if group is None:
            if not is_new_member:
                # A member id for a group we don't have: let it start over.
                error = answer_without_group(Request.JOIN_GROUP)
                turn.fx.reply(ctx.reply_to, join_error(version, error, member_id))
                return
            group = self._table.create(req.group_id, turn.now)

        protocols: Protocols = tuple((p.name, p.metadata) for p in req.protocols)
        join = _Join(
            ctx=ctx,
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            protocol_type=req.protocol_type,
            protocols=protocols,
            session_timeout_ms=session_timeout,
            rebalance_timeout_ms=rebalance_timeout,
        )
        if not self._max_size_checks[group.state](group, member_id):
            removed = group.remove(member_id)
            if removed is not None:
                self._timers.cancel(member_key(group.group_id, member_id))
            turn.fx.reply(
                ctx.reply_to,
                join_error(version, ErrorCode.group_max_size_reached, UNKNOWN_MEMBER_ID),
            )
        elif is_new_member:
            self._join_new_member(group, join, turn)
        else:
            self._join_existing_member(group, join, turn)

        self._rebalance.maybe_complete_join(group, turn)

    def _below_max_parked_joins(self, group: ClassicGroup, member_id: str) -> bool:
        known = group.members.get(member_id)
        return (known is not None and known.is_awaiting_join) or (
            group.num_awaiting_join < self._config.max_size
        )

    def _below_max_members(self, group: ClassicGroup, member_id: str) -> bool:
        return group.has(member_id) or len(group) < self._config.max_size

    def _refused(self, group: ClassicGroup, join: _Join, member_id: str, fx: Effects) -> bool:
        """The check every join starts with: a protocol the group cannot take.
        Answers and returns True when the join is refused."""
        if group.supports_protocols(join.protocol_type, join.protocol_names):
            return False
        error = ErrorCode.inconsistent_group_protocol
        fx.reply(join.ctx.reply_to, join_error(join.ctx.api_version, error, member_id))
        return True

    def _join_new_member(self, group: ClassicGroup, join: _Join, turn: Turn) -> None:
        version = join.ctx.api_version
        if self._refused(group, join, UNKNOWN_MEMBER_ID, turn.fx):
            return
        instance_id = join.group_instance_id
        new_member_id = self._new_member_id(
            instance_id if instance_id is not None else join.ctx.client_id
        )
        if instance_id is not None:
            old_member_id = group.static_member_id(instance_id)
            if old_member_id is not None:
                self._replace_static_member(group, join, old_member_id, new_member_id, turn)
            else:
                self._add_member_and_rebalance(group, join, new_member_id, turn)
        elif version >= _MEMBER_ID_REQUIRED_VERSION:
            group.pending_members.add(new_member_id)
            self._timers.schedule(
                member_key(group.group_id, new_member_id),
                turn.now + join.session_timeout_ms,
                MemberDeadline(group.incarnation, pending=True),
            )
            turn.fx.reply(
                join.ctx.reply_to,
                join_error(version, ErrorCode.member_id_required, new_member_id),
            )
        else:
            self._add_member_and_rebalance(group, join, new_member_id, turn)

    def _join_existing_member(self, group: ClassicGroup, join: _Join, turn: Turn) -> None:
        version = join.ctx.api_version
        member_id = join.member_id
        if self._refused(group, join, member_id, turn.fx):
            return
        if group.is_pending(member_id):
            if join.group_instance_id is not None:
                # Pending ids are only handed to dynamic members.
                turn.fx.reply(
                    join.ctx.reply_to,
                    join_error(version, ErrorCode.unknown_server_error, UNKNOWN_MEMBER_ID),
                )
                return
            self._add_member_and_rebalance(group, join, member_id, turn)
            return
        error = validate_current_member(group, member_id, join.group_instance_id)
        if error is not None:
            turn.fx.reply(join.ctx.reply_to, join_error(version, error, member_id))
            return

        answer = self._answers[group.state]
        if isinstance(answer, ErrorCode):
            turn.fx.reply(join.ctx.reply_to, join_error(version, answer, member_id))
        else:
            answer(group, group.get(member_id), join, turn)

    def _rejoin_if_changed(
        self, group: ClassicGroup, member: Member, join: _Join, turn: Turn
    ) -> None:
        if member.matches(join.protocols):
            # Probably a lost JoinGroup response: the current generation again.
            version = join.ctx.api_version
            turn.fx.reply(join.ctx.reply_to, self._current_generation(group, member, version))
        else:
            self._update_member_and_rebalance(group, member, join, turn)

    def _rejoin_if_leader_or_changed(
        self, group: ClassicGroup, member: Member, join: _Join, turn: Turn
    ) -> None:
        if group.is_leader(member.member_id) or not member.matches(join.protocols):
            # The leader rejoins to have the assignment redone (say, new partitions).
            self._update_member_and_rebalance(group, member, join, turn)
        else:
            turn.fx.reply(
                join.ctx.reply_to,
                self._current_generation(group, member, join.ctx.api_version, with_members=False),
            )

    def _current_generation(
        self, group: ClassicGroup, member: Member, version: int, *, with_members: bool = True
    ) -> JoinGroupResponse:
        members = member_list(group) if with_members and group.is_leader(member.member_id) else ()
        return generation_answer(group, version, member.member_id, members=members)

    def _add_member_and_rebalance(
        self, group: ClassicGroup, join: _Join, member_id: str, turn: Turn
    ) -> None:
        member = Member(
            member_id=member_id,
            group_instance_id=join.group_instance_id,
            # Echoed by DescribeGroups v0-v4: a header's 32,767 bytes may have
            # grown when invalid UTF-8 was replaced.
            client_id=fit(join.ctx.client_id),
            client_host=join.ctx.client_host,
            rebalance_timeout_ms=join.rebalance_timeout_ms,
            session_timeout_ms=join.session_timeout_ms,
            protocol_type=join.protocol_type,
            protocols=join.protocols,
            awaiting_join=join.ctx.reply_to,
            join_api_version=join.ctx.api_version,
            is_new=True,
        )
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        # A new member cannot heartbeat while its JoinGroup is parked; bound the
        # wait so a client that gave up does not linger in the rebalance.
        self._rebalance.reschedule_session(group, member, turn.now, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._rebalance.maybe_prepare_rebalance(group, turn)

    def _update_member_and_rebalance(
        self, group: ClassicGroup, member: Member, join: _Join, turn: Turn
    ) -> None:
        group.update_member(
            member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms
        )
        self._park_join(group, member, join.ctx, turn.fx)
        self._rebalance.maybe_prepare_rebalance(group, turn)

    def _park_join(
        self, group: ClassicGroup, member: Member, ctx: RequestContext, fx: Effects
    ) -> None:
        displaced = group.take_join(member)
        if displaced is not None:
            # The member has moved on to a newer JoinGroup; answer the stale one
            # rather than leave it hanging.
            fx.reply(
                displaced,
                join_error(
                    member.join_api_version, ErrorCode.rebalance_in_progress, member.member_id
                ),
            )
        group.park_join(member, ctx.reply_to, ctx.api_version)

    def _replace_static_member(
        self,
        group: ClassicGroup,
        join: _Join,
        old_member_id: str,
        new_member_id: str,
        turn: Turn,
    ) -> None:
        """A known group.instance.id joins without its member id (it restarted)."""
        instance_id = join.group_instance_id
        assert instance_id is not None
        # In a Stable group the new id is stored: copy the group for a rollback.
        self._table.guard(group.group_id)
        member = group.get(old_member_id)
        old_leader = group.leader_id

        # Whoever still holds the old id is a zombie: fence it right away.
        answer_parked(group, member, ErrorCode.fenced_instance_id, turn.fx, old_member_id)
        self._timers.cancel(member_key(group.group_id, old_member_id))
        group.replace_static_member(instance_id, old_member_id, new_member_id)
        self._rebalance.reschedule_session(group, member, turn.now, member.session_timeout_ms)
        group.update_member(
            member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms
        )
        group.park_join(member, join.ctx.reply_to, join.ctx.api_version)

        # Only a group with members knows a static member: never Empty here.
        self._static_rejoins[group.state](group, member, join, old_leader, turn)

    def _rebalance_for_new_id(
        self, group: ClassicGroup, member: Member, join: _Join, old_leader: str | None, turn: Turn
    ) -> None:
        # The leader may have been given the old id to assign to: start over.
        self._rebalance.prepare_rebalance(group, turn)

    def _keep_generation(
        self, group: ClassicGroup, member: Member, join: _Join, old_leader: str | None, turn: Turn
    ) -> None:
        if group.protocol_name != group.select_protocol():
            self._rebalance.maybe_prepare_rebalance(group, turn)
            return
        # Same protocol: store the new member id and carry on without a rebalance.
        assignment = {m.member_id: m.assignment for m in group.members.values()}
        turn.fx.emit(
            group_metadata_record(group_metadata_value(group, assignment), group.group_id),
            self._table,
        )
        group.take_join(member)
        version = join.ctx.api_version
        new_member_id = member.member_id
        if version >= _SKIP_ASSIGNMENT_VERSION:
            # The leader learns it leads but keeps the stored assignment.
            is_leader = group.is_leader(new_member_id)
            response = generation_answer(
                group,
                version,
                new_member_id,
                skip_assignment=is_leader,
                members=member_list(group) if is_leader else (),
            )
        else:
            # Older clients would redo an assignment a Stable group ignores;
            # naming the old leader keeps a restarted leader from trying.
            response = generation_answer(group, version, new_member_id, leader=old_leader or "")
        turn.fx.reply(join.ctx.reply_to, response)


def _always_accept(group: ClassicGroup, member_id: str) -> bool:
    return True


def _keep_parked(
    group: ClassicGroup, member: Member, join: _Join, old_leader: str | None, turn: Turn
) -> None:
    """The join phase under way answers the parked join with the others."""


class _Join:
    """The parts of a JoinGroup request the rules look at."""

    __slots__ = (
        "ctx",
        "group_instance_id",
        "member_id",
        "protocol_names",
        "protocol_type",
        "protocols",
        "rebalance_timeout_ms",
        "session_timeout_ms",
    )

    def __init__(
        self,
        *,
        ctx: RequestContext,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str,
        protocols: Protocols,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
    ) -> None:
        self.ctx = ctx
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.protocol_names = frozenset(name for name, _ in protocols)
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
