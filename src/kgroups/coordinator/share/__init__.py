"""Share groups (KIP-932) on the group coordinator: membership, epochs and
the server-side assignment; the records live in ``__consumer_offsets``
beside the classic and consumer groups'."""

from kgroups.coordinator.share.config import ShareGroupConfig
from kgroups.coordinator.share.coordinator import (
    ShareEvents,
    ShareGroupCoordinator,
    ShareHeartbeatAnswer,
    ShareHeartbeatError,
    ShareHeartbeatRequest,
)
from kgroups.coordinator.share.group import ShareGroup, ShareGroupMember, ShareGroupState

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
