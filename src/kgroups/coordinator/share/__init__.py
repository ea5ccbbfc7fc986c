"""Share groups (KIP-932) on the group coordinator: membership, epochs and
the server-side assignment; the records live in ``__consumer_offsets``
beside the classic and consumer groups'."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgroups.coordinator.share.config import ShareGroupConfig
    from kgroups.coordinator.share.coordinator import (
        ShareEvents,
        ShareGroupCoordinator,
        ShareHeartbeatAnswer,
        ShareHeartbeatError,
        ShareHeartbeatRequest,
    )
    from kgroups.coordinator.share.group import ShareGroup, ShareGroupMember, ShareGroupState

# Each name is imported on first use: the broker imports a module of this
# package at start and needs the rest only with the first group request.
_HOMES = {
    "ShareGroupConfig": "kgroups.coordinator.share.config",
    "ShareEvents": "kgroups.coordinator.share.coordinator",
    "ShareGroupCoordinator": "kgroups.coordinator.share.coordinator",
    "ShareHeartbeatAnswer": "kgroups.coordinator.share.coordinator",
    "ShareHeartbeatError": "kgroups.coordinator.share.coordinator",
    "ShareHeartbeatRequest": "kgroups.coordinator.share.coordinator",
    "ShareGroup": "kgroups.coordinator.share.group",
    "ShareGroupMember": "kgroups.coordinator.share.group",
    "ShareGroupState": "kgroups.coordinator.share.group",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


__all__ = [
    "ShareEvents",
    "ShareGroup",
    "ShareGroupConfig",
    "ShareGroupCoordinator",
    "ShareGroupMember",
    "ShareGroupState",
    "ShareHeartbeatAnswer",
    "ShareHeartbeatError",
    "ShareHeartbeatRequest",
]
