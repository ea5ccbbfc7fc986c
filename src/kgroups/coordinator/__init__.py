"""Kafka's classic group coordinator as a sans-IO, event-sourced state machine.

One :class:`GroupCoordinatorShard` per ``__consumer_offsets`` partition takes
requests (kio entities of the newest versions) with a :class:`RequestContext`
and the current time, and returns a :class:`Result`: records to append, and
replies to send once they are stored.
"""

from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.result import AppendToken, Result
from kgroups.coordinator.shard import GroupCoordinatorShard
from kgroups.coordinator.state import GroupState
from kgroups.coordinator.views import GroupView, MemberView

__all__ = [
    "AppendToken",
    "CoordinatorConfig",
    "GroupCoordinatorShard",
    "GroupState",
    "GroupView",
    "MemberView",
    "RequestContext",
    "Result",
]
