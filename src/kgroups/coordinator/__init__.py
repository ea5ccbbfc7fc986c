"""Kafka's classic group coordinator as a sans-IO, event-sourced state machine.

One :class:`GroupCoordinatorShard` per ``__consumer_offsets`` partition takes
requests (kio entities of the newest versions) with a :class:`RequestContext`
and the current time, and returns a :class:`Result`: records to append, and
replies to send once they are stored.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgroups.coordinator.config import CoordinatorConfig
    from kgroups.coordinator.context import RequestContext
    from kgroups.coordinator.result import AppendToken, Result
    from kgroups.coordinator.shard import GroupCoordinatorShard
    from kgroups.coordinator.state import GroupState
    from kgroups.coordinator.views import GroupView, MemberView

# Each name is imported on first use: the broker imports a module of this
# package at start and needs the rest only with the first group request.
_HOMES = {
    "CoordinatorConfig": "kgroups.coordinator.config",
    "RequestContext": "kgroups.coordinator.context",
    "AppendToken": "kgroups.coordinator.result",
    "Result": "kgroups.coordinator.result",
    "GroupCoordinatorShard": "kgroups.coordinator.shard",
    "GroupState": "kgroups.coordinator.state",
    "GroupView": "kgroups.coordinator.views",
    "MemberView": "kgroups.coordinator.views",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


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
