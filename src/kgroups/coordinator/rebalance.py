"""The rebalance machinery of a classic group: preparing a rebalance, the
(delayed) end of its join phase, answering the members waiting for their
assignment, and the member sessions and timers that drive it.

The rules are Kafka's GroupCoordinator's (3.x). Requests parked on a member
are answered by whichever call completes the phase they wait for.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.join_group.v9.response import JoinGroupResponse, JoinGroupResponseMember

from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.delayed_operations import (
    JoinDeadline,
    MemberDeadline,
    SyncDeadline,
    Timers,
    join_key,
    member_deadline,
    member_key,
    sync_key,
)
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.group_records import group_metadata_record
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.member import Member
from kgroups.coordinator.parked_requests import answer_parked
from kgroups.coordinator.records import GroupMetadataValue
from kgroups.coordinator.responses import (
    UNKNOWN_MEMBER_ID,
    join_response,
    sync_response,
)
from kgroups.coordinator.state import (
    REMOVE_AND_COMPLETE_JOIN,
    REMOVE_AND_REBALANCE,
    GroupState,
    Request,
    answers_by_state,
)
from kgroups.coordinator.turn import Turn


class Rebalance:
    def __init__(self, table: GroupTable, timers: Timers, config: CoordinatorConfig) -> None:
        self._table = table
        self._timers = timers
        self._config = config
        # What a removal (a leave, an expired session) does to the group.
        self._after_removal = answers_by_state(
            Request.LEAVE_GROUP,
            {
                REMOVE_AND_REBALANCE: self.maybe_prepare_rebalance,
                REMOVE_AND_COMPLETE_JOIN: self.maybe_complete_join,
            },
        )

    # -- rebalancing -------------------------------------------------------

    def maybe_prepare_rebalance(self, group: ClassicGroup, turn: Turn) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group, turn)

    def prepare_rebalance(self, group: ClassicGroup, turn: Turn) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            # Members waiting for an assignment will never get this one.
            self._reset_and_propagate_assignment_error(group, ErrorCode.rebalance_in_progress, turn)
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
            self._timers.schedule(join_key(group.group_id), turn.now + initial_delay, deadline)
        else:
            self._timers.schedule(
                join_key(group.group_id),
                turn.now + rebalance_timeout,
                JoinDeadline(group.incarnation),
            )
        group.transition_to(GroupState.PREPARING_REBALANCE, turn.now)
        self.maybe_complete_join(group, turn)

    def maybe_complete_join(self, group: ClassicGroup, turn: Turn) -> None:
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        entry = self._timers.get(join_key(group.group_id))
        if entry is not None and isinstance(entry[1], JoinDeadline) and entry[1].initial:
            return  # the initial delay always runs its course
        if group.has_all_members_joined():
            self._complete_join(group, turn)

    def _complete_join(self, group: ClassicGroup, turn: Turn) -> None:
        """End the join phase: drop who did not rejoin, start the next generation."""
        self._timers.cancel(join_key(group.group_id))
        for member in group.not_yet_rejoined():
            if not member.is_static:  # static members may come back within their session
                self.remove_member_quietly(group, member)

        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members that have not rejoined: wait another round.
            self._timers.schedule(
                join_key(group.group_id),
                turn.now + group.rebalance_timeout_ms(),
                JoinDeadline(group.incarnation),
            )
            return
        if not group.members:
            turn.fx.emit(
                group_metadata_record(_next_empty_generation(group, turn.now), group.group_id),
                self._table,
            )
            return

        group.start_next_generation(turn.now)
        leader_members = member_list(group)
        for member in group.members.values():
            reply_to = group.take_join(member)
            if reply_to is not None:
                is_leader = group.is_leader(member.member_id)
                turn.fx.reply(
                    reply_to,
                    generation_answer(
                        group,
                        member.join_api_version,
                        member.member_id,
                        members=leader_members if is_leader else (),
                    ),
                )
            self.reschedule_session(group, member, turn.now, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self._timers.schedule(
            sync_key(group.group_id),
            turn.now + group.rebalance_timeout_ms(),
            SyncDeadline(group.incarnation, group.generation_id),
        )

    def _reset_and_propagate_assignment_error(
        self, group: ClassicGroup, error: ErrorCode, turn: Turn
    ) -> None:
        for member in group.members.values():
            member.assignment = b""
        self.propagate_assignment(group, error, turn)

    def propagate_assignment(
        self, group: ClassicGroup, error: ErrorCode, turn: Turn
    ) -> list[object]:
        """Answer every parked SyncGroup; the reply_tos answered."""
        ok = error is ErrorCode.none
        answered = []
        for member in group.members.values():
            reply_to = group.take_sync(member)
            if reply_to is None:
                continue
            turn.fx.reply(
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
            self.reschedule_session(group, member, turn.now, member.session_timeout_ms)
        return answered

    def _clear_pending_sync(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self._timers.cancel(sync_key(group.group_id))

    def remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
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
            self._timers.schedule(key, now + timeout_ms, member_deadline(group.incarnation, False))

    def remove_member_quietly(self, group: ClassicGroup, member: Member) -> None:
        group.remove(member.member_id)
        self._timers.cancel(member_key(group.group_id, member.member_id))

    def remove_member_and_update_group(
        self, group: ClassicGroup, member: Member, turn: Turn
    ) -> None:
        # A parked JoinGroup of a removed member is told to start over.
        answer_parked(group, member, ErrorCode.unknown_member_id, turn.fx, UNKNOWN_MEMBER_ID)
        self.remove_member_quietly(group, member)
        then = self._after_removal[group.state]
        if not isinstance(then, ErrorCode):
            then(group, turn)

    def remove_pending_member_and_update_group(
        self, group: ClassicGroup, member_id: str, turn: Turn
    ) -> None:
        group.remove(member_id)
        self._timers.cancel(member_key(group.group_id, member_id))
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self.maybe_complete_join(group, turn)

    # -- timers ------------------------------------------------------------

    def on_member_deadline(
        self, group_id: str, member_id: str, deadline: MemberDeadline, turn: Turn
    ) -> None:
        group = self._table.get(group_id)
        if group is None or group.incarnation != deadline.incarnation:
            return
        if deadline.pending:
            self.remove_pending_member_and_update_group(group, member_id, turn)
            return
        member = group.members.get(member_id)
        if member is None or member.session_is_kept_alive():
            return
        self.remove_member_and_update_group(group, member, turn)

    def on_join_deadline(self, group_id: str, deadline: JoinDeadline, turn: Turn) -> None:
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
                turn.now + delay,
                JoinDeadline(
                    group.incarnation,
                    initial=True,
                    delay_ms=delay,
                    remaining_ms=max(deadline.remaining_ms - deadline.delay_ms, 0),
                ),
            )
            return
        self._complete_join(group, turn)

    def on_sync_deadline(self, group_id: str, deadline: SyncDeadline, turn: Turn) -> None:
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
                self.remove_member_quietly(group, member)
        self.prepare_rebalance(group, turn)


def generation_answer(
    group: ClassicGroup,
    api_version: int,
    member_id: str,
    *,
    leader: str | None = None,
    skip_assignment: bool = False,
    members: tuple[JoinGroupResponseMember, ...] = (),
) -> JoinGroupResponse:
    """A JoinGroup answer naming the group's current generation; ``leader``
    stands in for the group's leader where given."""
    return join_response(
        api_version,
        ErrorCode.none,
        member_id,
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=(group.leader_id or "") if leader is None else leader,
        skip_assignment=skip_assignment,
        members=members,
    )


def member_list(group: ClassicGroup) -> tuple[JoinGroupResponseMember, ...]:
    """The members and their metadata, as the leader's JoinGroup answer lists them."""
    return tuple(
        JoinGroupResponseMember(
            member_id=member.member_id,
            group_instance_id=member.group_instance_id,
            metadata=metadata,
        )
        for member, metadata in group.current_member_metadata()
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
