"""Classic group membership: the rules of JoinGroup, SyncGroup, Heartbeat and
LeaveGroup wired to one shard's table and timers, and what becomes of parked
requests when a group is loaded, unloaded or rolled back.

The rules are Kafka's GroupCoordinator's (3.x). Requests that cannot be
answered yet park their ``reply_to`` on the member; the code that later
completes the phase puts the answers into the Effects of whatever call
completed it (another request, a timer, a leave).
"""

from __future__ import annotations

from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kgroups.coordinator.append_errors import group_metadata_append_error
from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.delayed_operations import Timers
from kgroups.coordinator.effects import Effects
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.heartbeat import HeartbeatHandler
from kgroups.coordinator.join_group import JoinGroupHandler
from kgroups.coordinator.leave_group import LeaveGroupHandler
from kgroups.coordinator.parked_requests import answer_parked, error_answers, parked_reply_tos
from kgroups.coordinator.rebalance import Rebalance
from kgroups.coordinator.state import GroupState
from kgroups.coordinator.sync_group import SyncGroupHandler
from kgroups.coordinator.turn import Turn


class Membership:
    """The shard's way in to the membership rules: one handler per request,
    the rebalance timers, and the group's moves below."""

    # JoinGroupHandler's parameters, restated: they are passed on to it.
    def __init__(
        self,
        table: GroupTable,
        timers: Timers,
        config: CoordinatorConfig,
        new_member_id: Callable[[str], str],
    ) -> None:
        self._config = config
        rebalance = Rebalance(table, timers, config)
        self._rebalance = rebalance
        self.join_group = JoinGroupHandler(
            table, timers, config, new_member_id, rebalance
        ).join_group
        self.sync_group = SyncGroupHandler(table, rebalance).sync_group
        heartbeats = HeartbeatHandler(table, rebalance)
        self.heartbeat = heartbeats.heartbeat
        self.heartbeat_error = heartbeats.heartbeat_error
        self.leave_group = LeaveGroupHandler(table, rebalance).leave_group
        self.on_member_deadline = rebalance.on_member_deadline
        self.on_join_deadline = rebalance.on_join_deadline
        self.on_sync_deadline = rebalance.on_sync_deadline
        self.reschedule_session = rebalance.reschedule_session

    # -- moving away --------------------------------------------------------

    def on_unloaded(self, group: ClassicGroup, fx: Effects) -> None:
        """Another coordinator takes over: parked requests go find it."""
        for member in group.members.values():
            answer_parked(group, member, ErrorCode.not_coordinator, fx)

    # -- after a rollback ----------------------------------------------------

    def on_restored(
        self,
        discarded: ClassicGroup | None,
        group: ClassicGroup | None,
        answered: set[int],
        error: ErrorCode,
        turn: Turn,
    ) -> None:
        """``group`` was put back in place of ``discarded`` after a batch was lost.

        ``answered`` holds the ids of the reply_tos the rollback answered.
        Requests parked only in the discarded state get the error; those
        answered are no longer parked; a group that was waiting for its
        assignment starts the rebalance again, as its members were told to.
        """
        error = group_metadata_append_error(error)
        if discarded is not None and discarded is not group:
            still = set() if group is None else {id(r) for r in parked_reply_tos(group)}
            for member in discarded.members.values():
                for reply_to, response in error_answers(member, error):
                    if id(reply_to) not in answered and id(reply_to) not in still:
                        turn.fx.reply(reply_to, response)
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
            self._rebalance.prepare_rebalance(group, turn)

    # -- after a conversion from a consumer group -----------------------------

    def on_converted(self, group: ClassicGroup, turn: Turn) -> None:
        """The group was a consumer group until now: its members' sessions
        start, and a rebalance gives them a classic generation."""
        for member in group.members.values():
            self._rebalance.reschedule_session(group, member, turn.now, member.session_timeout_ms)
        self._rebalance.prepare_rebalance(group, turn)

    # -- after loading -----------------------------------------------------

    def on_loaded(self, group: ClassicGroup, turn: Turn) -> None:
        for member in group.members.values():
            self._rebalance.reschedule_session(group, member, turn.now, member.session_timeout_ms)
        if len(group) > self._config.max_size:
            # group.max.size was lowered: rebalance so the extra members are shed.
            self._rebalance.prepare_rebalance(group, turn)
