"""Classic group membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and
the delayed operations that drive rebalances.

The rules are Kafka's GroupCoordinator's (3.x). Requests that cannot be
answered yet park their ``reply_to`` on the member; the code that later
completes the phase puts the answers into the Effects of whatever call
completed it (another request, a timer, a leave).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9.request import JoinGroupRequest
from kio.schema.join_group.v9.response import JoinGroupResponse, JoinGroupResponseMember
from kio.schema.leave_group.v5.request import LeaveGroupRequest
from kio.schema.leave_group.v5.response import MemberResponse
from kio.schema.sync_group.v5.request import SyncGroupRequest

from kgroups.coordinator.append_errors import group_metadata_append_error
from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.delayed_operations import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    JoinDeadline,
    MemberDeadline,
    SyncDeadline,
    Timers,
    join_key,
    member_key,
    sync_key,
)
from kgroups.coordinator.effects import Effects
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.group_records import group_metadata_record, group_metadata_value
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.member import Member, Protocols
from kgroups.coordinator.records import GroupMetadataValue
from kgroups.coordinator.responses import (
    UNKNOWN_MEMBER_ID,
    heartbeat_response,
    join_error,
    join_response,
    leave_response,
    sync_response,
)
from kgroups.coordinator.state import GroupState
from kgroups.protocol.strings import fit

# JoinGroup v4 introduced the two-step join: a member without an id is
# handed one with MEMBER_ID_REQUIRED and must join again with it (KIP-394).
_MEMBER_ID_REQUIRED_VERSION = 4
# JoinGroup v9 lets a rejoining static leader skip the assignment (KIP-814).
_SKIP_ASSIGNMENT_VERSION = 9
# SyncGroup v5 made protocol type and name mandatory.
_MANDATORY_SYNC_PROTOCOL_VERSION = 5

_ONE_MS = datetime.timedelta(milliseconds=1)


def _millis(value: datetime.timedelta) -> int:
    return value // _ONE_MS


class Membership:
    def __init__(
        self,
        table: GroupTable,
        timers: Timers,
        config: CoordinatorConfig,
        new_member_id: Callable[[str], str],
    ) -> None:
        self._table = table
        self._timers = timers
        self._config = config
        self._new_member_id = new_member_id

    # -- JoinGroup ---------------------------------------------------------

    def join_group(self, req: JoinGroupRequest, ctx: RequestContext, now: int, fx: Effects) -> None:
        version = ctx.api_version
        member_id = req.member_id
        if not req.group_id:
            fx.reply(ctx.reply_to, join_error(version, ErrorCode.invalid_group_id, member_id))
            return
        session_timeout = _millis(req.session_timeout)
        # JoinGroup v0 had no rebalance timeout: the session timeout served.
        rebalance_timeout = session_timeout if version == 0 else _millis(req.rebalance_timeout)
        if not (
            self._config.min_session_timeout_ms
            <= session_timeout
            <= self._config.max_session_timeout_ms
        ):
            fx.reply(
                ctx.reply_to, join_error(version, ErrorCode.invalid_session_timeout, member_id)
            )
            return

        is_new_member = member_id == UNKNOWN_MEMBER_ID
        group = self._table.get(req.group_id)
        if group is None:
            if not is_new_member:
                # A member id for a group we don't have: let it start over.
                fx.reply(ctx.reply_to, join_error(version, ErrorCode.unknown_member_id, member_id))
                return
            group = self._table.create(req.group_id, now)

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
        if not self._accepts_joining_member(group, member_id):
            removed = group.remove(member_id)
            if removed is not None:
                self._timers.cancel(member_key(group.group_id, member_id))
            fx.reply(
                ctx.reply_to,
                join_error(version, ErrorCode.group_max_size_reached, UNKNOWN_MEMBER_ID),
            )
        elif is_new_member:
            self._join_new_member(group, join, now, fx)
        else:
            self._join_existing_member(group, join, now, fx)

        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group, now, fx)

    def _accepts_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self._config.max_size
        if group.state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.is_in(GroupState.PREPARING_REBALANCE):
            # Counting parked joins (not members) sheds the members that rejoin
            # last when group.max.size was lowered.
            known = group.members.get(member_id)
            return (known is not None and known.is_awaiting_join) or (
                group.num_awaiting_join < max_size
            )
        # Members that don't rejoin are dropped when the join phase completes.
        return group.has(member_id) or len(group) < max_size

    def _refused(self, group: ClassicGroup, join: _Join, member_id: str, fx: Effects) -> bool:
        """The checks every join starts with: a dead group, a protocol the group
        cannot take. Answers and returns True when the join is refused."""
        if group.is_in(GroupState.DEAD):
            error = ErrorCode.coordinator_not_available
        elif not group.supports_protocols(join.protocol_type, join.protocol_names):
            error = ErrorCode.inconsistent_group_protocol
        else:
            return False
        fx.reply(join.ctx.reply_to, join_error(join.ctx.api_version, error, member_id))
        return True

    def _join_new_member(self, group: ClassicGroup, join: _Join, now: int, fx: Effects) -> None:
        version = join.ctx.api_version
        if self._refused(group, join, UNKNOWN_MEMBER_ID, fx):
            return
        instance_id = join.group_instance_id
        new_member_id = self._new_member_id(
            instance_id if instance_id is not None else join.ctx.client_id
        )
        if instance_id is not None:
            old_member_id = group.static_member_id(instance_id)
            if old_member_id is not None:
                self._replace_static_member(group, join, old_member_id, new_member_id, now, fx)
            else:
                self._add_member_and_rebalance(group, join, new_member_id, now, fx)
        elif version >= _MEMBER_ID_REQUIRED_VERSION:
            group.pending_members.add(new_member_id)
            self._timers.schedule(
                member_key(group.group_id, new_member_id),
                now + join.session_timeout_ms,
                MemberDeadline(group.incarnation, pending=True),
            )
            fx.reply(
                join.ctx.reply_to,
                join_error(version, ErrorCode.member_id_required, new_member_id),
            )
        else:
            self._add_member_and_rebalance(group, join, new_member_id, now, fx)

    def _join_existing_member(
        self, group: ClassicGroup, join: _Join, now: int, fx: Effects
    ) -> None:
        version = join.ctx.api_version
        member_id = join.member_id
        if self._refused(group, join, member_id, fx):
            return
        if group.is_pending(member_id):
            if join.group_instance_id is not None:
                # Pending ids are only handed to dynamic members.
                fx.reply(
                    join.ctx.reply_to,
                    join_error(version, ErrorCode.unknown_server_error, UNKNOWN_MEMBER_ID),
                )
                return
            self._add_member_and_rebalance(group, join, member_id, now, fx)
            return
        error = validate_current_member(group, member_id, join.group_instance_id)
        if error is not None:
            fx.reply(join.ctx.reply_to, join_error(version, error, member_id))
            return

        member = group.get(member_id)
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, join, now, fx)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(join.protocols):
                # Probably a lost JoinGroup response: the current generation again.
                fx.reply(join.ctx.reply_to, self._current_generation(group, member, version))
            else:
                self._update_member_and_rebalance(group, member, join, now, fx)
        elif state is GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(join.protocols):
                # The leader rejoins to have the assignment redone (say, new partitions).
                self._update_member_and_rebalance(group, member, join, now, fx)
            else:
                fx.reply(
                    join.ctx.reply_to,
                    self._current_generation(group, member, version, with_members=False),
                )
        else:
            fx.reply(join.ctx.reply_to, join_error(version, ErrorCode.unknown_member_id, member_id))

    def _current_generation(
        self, group: ClassicGroup, member: Member, version: int, *, with_members: bool = True
    ) -> JoinGroupResponse:
        members = (
            self._member_list(group) if with_members and group.is_leader(member.member_id) else ()
        )
        return join_response(
            version,
            ErrorCode.none,
            member.member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            members=members,
        )

    @staticmethod
    def _member_list(group: ClassicGroup) -> tuple[JoinGroupResponseMember, ...]:
        return tuple(
            JoinGroupResponseMember(
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                metadata=metadata,
            )
            for member, metadata in group.current_member_metadata()
        )

    def _add_member_and_rebalance(
        self, group: ClassicGroup, join: _Join, member_id: str, now: int, fx: Effects
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
        self.reschedule_session(group, member, now, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, now, fx)

    def _update_member_and_rebalance(
        self, group: ClassicGroup, member: Member, join: _Join, now: int, fx: Effects
    ) -> None:
        group.update_member(
            member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms
        )
        self._park_join(group, member, join.ctx, fx)
        self._maybe_prepare_rebalance(group, now, fx)

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
        now: int,
        fx: Effects,
    ) -> None:
        """A known group.instance.id joins without its member id (it restarted)."""
        instance_id = join.group_instance_id
        assert instance_id is not None
        # In a Stable group the new id is stored: copy the group for a rollback.
        self._table.guard(group.group_id)
        member = group.get(old_member_id)
        old_leader = group.leader_id

        # Whoever still holds the old id is a zombie: fence it right away.
        self._fence(group, member, old_member_id, fx)
        self._timers.cancel(member_key(group.group_id, old_member_id))
        group.replace_static_member(instance_id, old_member_id, new_member_id)
        self.reschedule_session(group, member, now, member.session_timeout_ms)
        group.update_member(
            member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms
        )
        group.park_join(member, join.ctx.reply_to, join.ctx.api_version)

        state = group.state
        if state is GroupState.STABLE:
            if group.protocol_name != group.select_protocol():
                self._maybe_prepare_rebalance(group, now, fx)
                return
            # Same protocol: store the new member id and carry on without a rebalance.
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            fx.emit(
                group_metadata_record(group_metadata_value(group, assignment), group.group_id),
                self._table,
            )
            group.take_join(member)
            version = join.ctx.api_version
            if version >= _SKIP_ASSIGNMENT_VERSION:
                # The leader learns it leads but keeps the stored assignment.
                is_leader = group.is_leader(new_member_id)
                response = join_response(
                    version,
                    ErrorCode.none,
                    new_member_id,
                    generation_id=group.generation_id,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader=group.leader_id or "",
                    skip_assignment=is_leader,
                    members=self._member_list(group) if is_leader else (),
                )
            else:
                # Older clients would redo an assignment a Stable group ignores;
                # naming the old leader keeps a restarted leader from trying.
                response = join_response(
                    version,
                    ErrorCode.none,
                    new_member_id,
                    generation_id=group.generation_id,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader=old_leader or "",
                )
            fx.reply(join.ctx.reply_to, response)
        elif state is GroupState.COMPLETING_REBALANCE:
            # The leader may have been given the old id to assign to: start over.
            self._prepare_rebalance(group, now, fx)
        elif state is not GroupState.PREPARING_REBALANCE:
            raise AssertionError(f"static member of group {group.group_id} in {state}")

    def _fence(self, group: ClassicGroup, member: Member, old_member_id: str, fx: Effects) -> None:
        parked_join = group.take_join(member)
        if parked_join is not None:
            fx.reply(
                parked_join,
                join_error(member.join_api_version, ErrorCode.fenced_instance_id, old_member_id),
            )
        parked_sync = group.take_sync(member)
        if parked_sync is not None:
            fx.reply(parked_sync, sync_response(ErrorCode.fenced_instance_id))

    # -- rebalancing -------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: ClassicGroup, now: int, fx: Effects) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, now, fx)

    def _prepare_rebalance(self, group: ClassicGroup, now: int, fx: Effects) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            # Members waiting for an assignment will never get this one.
            self._reset_and_propagate_assignment_error(
                group, ErrorCode.rebalance_in_progress, now, fx
            )
        self._clear_pending_sync(group)

        rebalance_timeout = group.rebalance_timeout_ms()
        if group.is_in(GroupState.EMPTY):
            # Give more members a moment to arrive before the first generation.
            initial_delay = self._config.initial_rebalance_delay_ms
            deadline = JoinDeadline(
                group.incarnation,
                initial=True,
                delay_ms=initial_delay,
                remaining_ms=max(rebalance_timeout - initial_delay, 0),
            )
            self._timers.schedule(join_key(group.group_id), now + initial_delay, deadline)
        else:
            self._timers.schedule(
                join_key(group.group_id), now + rebalance_timeout, JoinDeadline(group.incarnation)
            )
        group.transition_to(GroupState.PREPARING_REBALANCE, now)
        self._maybe_complete_join(group, now, fx)

    def _maybe_complete_join(self, group: ClassicGroup, now: int, fx: Effects) -> None:
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        entry = self._timers.get(join_key(group.group_id))
        if entry is not None and isinstance(entry[1], JoinDeadline) and entry[1].initial:
            return  # the initial delay always runs its course
        if group.has_all_members_joined():
            self._complete_join(group, now, fx)

    def _complete_join(self, group: ClassicGroup, now: int, fx: Effects) -> None:
        """End the join phase: drop who did not rejoin, start the next generation."""
        self._timers.cancel(join_key(group.group_id))
        for member in group.not_yet_rejoined():
            if not member.is_static:  # static members may come back within their session
                self._remove_member_quietly(group, member)

        if group.is_in(GroupState.DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members that have not rejoined: wait another round.
            self._timers.schedule(
                join_key(group.group_id),
                now + group.rebalance_timeout_ms(),
                JoinDeadline(group.incarnation),
            )
            return
        if not group.members:
            fx.emit(
                group_metadata_record(_next_empty_generation(group, now), group.group_id),
                self._table,
            )
            return

        group.start_next_generation(now)
        leader_members = self._member_list(group)
        for member in group.members.values():
            reply_to = group.take_join(member)
            if reply_to is not None:
                is_leader = group.is_leader(member.member_id)
                fx.reply(
                    reply_to,
                    join_response(
                        member.join_api_version,
                        ErrorCode.none,
                        member.member_id,
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=group.leader_id or "",
                        members=leader_members if is_leader else (),
                    ),
                )
            self.reschedule_session(group, member, now, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self._timers.schedule(
            sync_key(group.group_id),
            now + group.rebalance_timeout_ms(),
            SyncDeadline(group.incarnation, group.generation_id),
        )

    def _reset_and_propagate_assignment_error(
        self, group: ClassicGroup, error: ErrorCode, now: int, fx: Effects
    ) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error, now, fx)

    def _propagate_assignment(
        self, group: ClassicGroup, error: ErrorCode, now: int, fx: Effects
    ) -> list[object]:
        """Answer every parked SyncGroup; the reply_tos answered."""
        ok = error is ErrorCode.none
        answered = []
        for member in group.members.values():
            reply_to = group.take_sync(member)
            if reply_to is None:
                continue
            fx.reply(
                reply_to,
                sync_response(
                    error,
                    protocol_type=group.protocol_type if ok else None,
                    protocol_name=group.protocol_name if ok else None,
                    assignment=member.assignment,
                ),
            )
            answered.append(reply_to)
            # Sessions were paused while waiting; they start again from now.
            self.reschedule_session(group, member, now, member.session_timeout_ms)
        return answered

    def _clear_pending_sync(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self._timers.cancel(sync_key(group.group_id))

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self._timers.cancel(sync_key(group.group_id))

    # -- sessions ----------------------------------------------------------

    def reschedule_session(
        self, group: ClassicGroup, member: Member, now: int, timeout_ms: int
    ) -> None:
        """The member is alive now; expect it again within ``timeout_ms``."""
        key = member_key(group.group_id, member.member_id)
        if member.session_is_kept_alive():
            self._timers.cancel(key)
        else:
            self._timers.schedule(key, now + timeout_ms, MemberDeadline(group.incarnation, False))

    def _remove_member_quietly(self, group: ClassicGroup, member: Member) -> None:
        group.remove(member.member_id)
        self._timers.cancel(member_key(group.group_id, member.member_id))

    def _remove_member_and_update_group(
        self, group: ClassicGroup, member: Member, now: int, fx: Effects
    ) -> None:
        # A parked JoinGroup of a removed member is told to start over.
        parked_join = group.take_join(member)
        if parked_join is not None:
            fx.reply(
                parked_join,
                join_error(member.join_api_version, ErrorCode.unknown_member_id, UNKNOWN_MEMBER_ID),
            )
        parked_sync = group.take_sync(member)
        if parked_sync is not None:
            fx.reply(parked_sync, sync_response(ErrorCode.unknown_member_id))
        self._remove_member_quietly(group, member)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, now, fx)
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group, now, fx)

    def _remove_pending_member_and_update_group(
        self, group: ClassicGroup, member_id: str, now: int, fx: Effects
    ) -> None:
        group.remove(member_id)
        self._timers.cancel(member_key(group.group_id, member_id))
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group, now, fx)

    # -- timers ------------------------------------------------------------

    def on_member_deadline(
        self, group_id: str, member_id: str, deadline: MemberDeadline, now: int, fx: Effects
    ) -> None:
        group = self._table.get(group_id)
        if group is None or group.incarnation != deadline.incarnation:
            return
        if group.is_in(GroupState.DEAD):
            return
        if deadline.pending:
            self._remove_pending_member_and_update_group(group, member_id, now, fx)
            return
        member = group.members.get(member_id)
        if member is None or member.session_is_kept_alive():
            return
        self._remove_member_and_update_group(group, member, now, fx)

    def on_join_deadline(
        self, group_id: str, deadline: JoinDeadline, now: int, fx: Effects
    ) -> None:
        group = self._table.get(group_id)
        if group is None or group.incarnation != deadline.incarnation:
            return
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        if deadline.initial and group.new_member_added and deadline.remaining_ms != 0:
            # Members are still arriving: wait a little longer, within the
            # rebalance timeout.
            group.new_member_added = False
            delay = min(self._config.initial_rebalance_delay_ms, deadline.remaining_ms)
            self._timers.schedule(
                join_key(group_id),
                now + delay,
                JoinDeadline(
                    group.incarnation,
                    initial=True,
                    delay_ms=delay,
                    remaining_ms=max(deadline.remaining_ms - deadline.delay_ms, 0),
                ),
            )
            return
        self._complete_join(group, now, fx)

    def on_sync_deadline(
        self, group_id: str, deadline: SyncDeadline, now: int, fx: Effects
    ) -> None:
        group = self._table.get(group_id)
        if group is None or group.incarnation != deadline.incarnation:
            return
        if group.generation_id != deadline.generation_id:
            return
        if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        if not group.pending_sync_members:
            return
        # They never asked for their assignment, so nothing of theirs is parked.
        for member_id in list(group.pending_sync_members):
            member = group.members.get(member_id)
            if member is not None:
                self._remove_member_quietly(group, member)
        self._prepare_rebalance(group, now, fx)

    # -- SyncGroup ---------------------------------------------------------

    def sync_group(self, req: SyncGroupRequest, ctx: RequestContext, now: int, fx: Effects) -> None:
        if ctx.api_version >= _MANDATORY_SYNC_PROTOCOL_VERSION and (
            req.protocol_type is None or req.protocol_name is None
        ):
            fx.reply(ctx.reply_to, sync_response(ErrorCode.inconsistent_group_protocol))
            return
        if not req.group_id:
            fx.reply(ctx.reply_to, sync_response(ErrorCode.invalid_group_id))
            return
        group = self._table.get(req.group_id)
        if group is None:
            fx.reply(ctx.reply_to, sync_response(ErrorCode.unknown_member_id))
            return
        error = self._validate_sync(group, req)
        if error is not None:
            fx.reply(ctx.reply_to, sync_response(error))
            return

        member = group.get(req.member_id)
        state = group.state
        if state is GroupState.EMPTY:
            fx.reply(ctx.reply_to, sync_response(ErrorCode.unknown_member_id))
        elif state is GroupState.PREPARING_REBALANCE:
            fx.reply(ctx.reply_to, sync_response(ErrorCode.rebalance_in_progress))
        elif state is GroupState.COMPLETING_REBALANCE:
            if group.is_leader(member.member_id):
                # The leader's assignment is stored: copy the group for a rollback.
                self._table.guard(group.group_id)
            displaced = group.take_sync(member)
            if displaced is not None:
                fx.reply(displaced, sync_response(ErrorCode.rebalance_in_progress))
            member.awaiting_sync = ctx.reply_to
            self._remove_pending_sync_member(group, member.member_id)
            if group.is_leader(member.member_id):
                self._store_assignment(group, req, now, fx)
        elif state is GroupState.STABLE:
            self._remove_pending_sync_member(group, member.member_id)
            fx.reply(
                ctx.reply_to,
                sync_response(
                    ErrorCode.none,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    assignment=member.assignment,
                ),
            )
            self.reschedule_session(group, member, now, member.session_timeout_ms)
        else:
            fx.reply(ctx.reply_to, sync_response(ErrorCode.coordinator_not_available))

    def _validate_sync(self, group: ClassicGroup, req: SyncGroupRequest) -> ErrorCode | None:
        if group.is_in(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        error = validate_current_member(group, req.member_id, req.group_instance_id)
        if error is not None:
            return error
        if req.generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        if req.protocol_type is not None and req.protocol_type != group.protocol_type:
            return ErrorCode.inconsistent_group_protocol
        if req.protocol_name is not None and req.protocol_name != group.protocol_name:
            return ErrorCode.inconsistent_group_protocol
        return None

    def _store_assignment(
        self, group: ClassicGroup, req: SyncGroupRequest, now: int, fx: Effects
    ) -> None:
        """The leader's assignment: store the group, then answer everyone waiting."""
        given = {a.member_id: a.assignment for a in req.assignments}
        # Members the leader left out get an empty assignment.
        assignment = {member_id: given.get(member_id, b"") for member_id in group.members}
        fx.emit(
            group_metadata_record(group_metadata_value(group, assignment), group.group_id),
            self._table,
        )
        self._propagate_assignment(group, ErrorCode.none, now, fx)

    # -- Heartbeat ---------------------------------------------------------

    def heartbeat(self, req: HeartbeatRequest, ctx: RequestContext, now: int, fx: Effects) -> None:
        fx.reply(ctx.reply_to, heartbeat_response(self._heartbeat_error(req, now)))

    def _heartbeat_error(self, req: HeartbeatRequest, now: int) -> ErrorCode:
        if not req.group_id:
            return ErrorCode.invalid_group_id
        group = self._table.get(req.group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        if group.is_in(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        error = validate_current_member(group, req.member_id, req.group_instance_id)
        if error is not None:
            return error
        if req.generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        if group.is_in(GroupState.EMPTY):
            return ErrorCode.unknown_member_id
        member = group.get(req.member_id)
        self.reschedule_session(group, member, now, member.session_timeout_ms)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    # -- LeaveGroup --------------------------------------------------------

    def leave_group(
        self, req: LeaveGroupRequest, ctx: RequestContext, now: int, fx: Effects
    ) -> None:
        version = ctx.api_version
        if not req.group_id:
            fx.reply(ctx.reply_to, leave_response(version, ErrorCode.invalid_group_id))
            return
        group = self._table.get(req.group_id)
        if group is None:
            members = tuple(
                _member_response(m.member_id, m.group_instance_id, ErrorCode.unknown_member_id)
                for m in req.members
            )
            fx.reply(ctx.reply_to, leave_response(version, ErrorCode.none, members))
            return
        if group.is_in(GroupState.DEAD):
            fx.reply(ctx.reply_to, leave_response(version, ErrorCode.coordinator_not_available))
            return
        results = []
        for identity in req.members:
            error = self._leave_one(group, identity.member_id, identity.group_instance_id, now, fx)
            results.append(_member_response(identity.member_id, identity.group_instance_id, error))
        fx.reply(ctx.reply_to, leave_response(version, ErrorCode.none, tuple(results)))

    def _leave_one(
        self,
        group: ClassicGroup,
        member_id: str,
        group_instance_id: str | None,
        now: int,
        fx: Effects,
    ) -> ErrorCode:
        if member_id == UNKNOWN_MEMBER_ID:
            # Admin tools remove static members by instance id alone.
            current = (
                None if group_instance_id is None else group.static_member_id(group_instance_id)
            )
            if current is None:
                return ErrorCode.unknown_member_id
            self._remove_member_and_update_group(group, group.get(current), now, fx)
            return ErrorCode.none
        if group.is_pending(member_id):
            self._remove_pending_member_and_update_group(group, member_id, now, fx)
            return ErrorCode.none
        error = validate_current_member(group, member_id, group_instance_id)
        if error is not None:
            return error
        self._remove_member_and_update_group(group, group.get(member_id), now, fx)
        return ErrorCode.none

    # -- moving away --------------------------------------------------------

    def on_unloaded(self, group: ClassicGroup, fx: Effects) -> None:
        """Another coordinator takes over: parked requests go find it."""
        for member in group.members.values():
            parked_join = group.take_join(member)
            if parked_join is not None:
                fx.reply(
                    parked_join,
                    join_error(
                        member.join_api_version, ErrorCode.not_coordinator, member.member_id
                    ),
                )
            parked_sync = group.take_sync(member)
            if parked_sync is not None:
                fx.reply(parked_sync, sync_response(ErrorCode.not_coordinator))

    # -- after a rollback ----------------------------------------------------

    def on_restored(
        self,
        discarded: ClassicGroup | None,
        group: ClassicGroup | None,
        answered: set[int],
        error: ErrorCode,
        now: int,
        fx: Effects,
    ) -> None:
        """``group`` was put back in place of ``discarded`` after a batch was lost.

        ``answered`` holds the ids of the reply_tos the rollback answered.
        Requests parked only in the discarded state get the error; those
        answered are no longer parked; a group that was waiting for its
        assignment starts the rebalance again, as its members were told to.
        """
        error = group_metadata_append_error(error)
        if discarded is not None and discarded is not group:
            still = set() if group is None else {id(r) for r in _parked(group)}
            for member in discarded.members.values():
                join, sync = member.awaiting_join, member.awaiting_sync
                if join is not None and id(join) not in answered and id(join) not in still:
                    fx.reply(join, join_error(member.join_api_version, error, member.member_id))
                if sync is not None and id(sync) not in answered and id(sync) not in still:
                    fx.reply(sync, sync_response(error))
        if group is None:
            return
        told = False
        for member in group.members.values():
            if member.awaiting_join is not None and id(member.awaiting_join) in answered:
                group.take_join(member)
                told = True
            if member.awaiting_sync is not None and id(member.awaiting_sync) in answered:
                group.take_sync(member)
                told = True
        went_back = discarded is None or not discarded.is_in(group.state)
        if group.is_in(GroupState.COMPLETING_REBALANCE) and (told or went_back):
            self._prepare_rebalance(group, now, fx)

    # -- after loading -----------------------------------------------------

    def on_loaded(self, group: ClassicGroup, now: int, fx: Effects) -> None:
        for member in group.members.values():
            self.reschedule_session(group, member, now, member.session_timeout_ms)
        if len(group) > self._config.max_size:
            # group.max.size was lowered: rebalance so the extra members are shed.
            self._prepare_rebalance(group, now, fx)


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


def validate_current_member(
    group: ClassicGroup, member_id: str, group_instance_id: str | None
) -> ErrorCode | None:
    """Is this the member it claims to be? FENCED_INSTANCE_ID for a stale static id."""
    if group_instance_id is not None:
        current = group.static_member_id(group_instance_id)
        if current is None:
            return ErrorCode.unknown_member_id
        if current != member_id:
            return ErrorCode.fenced_instance_id
        return None
    if not group.has(member_id):
        return ErrorCode.unknown_member_id
    return None


def _parked(group: ClassicGroup) -> list[object]:
    return [
        reply_to
        for member in group.members.values()
        for reply_to in (member.awaiting_join, member.awaiting_sync)
        if reply_to is not None
    ]


def _member_response(
    member_id: str, group_instance_id: str | None, error: ErrorCode
) -> MemberResponse:
    return MemberResponse(
        member_id=member_id, group_instance_id=group_instance_id, error_code=error
    )


def _next_empty_generation(group: ClassicGroup, now: int) -> GroupMetadataValue:
    """The record of a group whose rebalance ended with nobody in it."""
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id + 1,
        protocol=None,
        leader=group.leader_id,
        current_state_timestamp=now,
        members=(),
    )
