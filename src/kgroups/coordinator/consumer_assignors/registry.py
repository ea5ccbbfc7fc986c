"""Server-side assignors by name, as a member's ``server_assignor`` names them.

Which of them a broker offers is Kafka's ``group.consumer.assignors`` (default
``uniform,range``); the first is the group's default. A name the broker does
not offer is answered with UNSUPPORTED_ASSIGNOR.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Protocol

from kgroups.coordinator.consumer_assignors.range import RangeAssignor
from kgroups.coordinator.consumer_assignors.spec import GroupAssignment, GroupSpec, TopicMetadata
from kgroups.coordinator.consumer_assignors.uniform import UniformAssignor

__all__ = [
    "ASSIGNORS_CONFIG",
    "DEFAULT_ASSIGNORS",
    "ConsumerGroupAssignor",
    "UnsupportedAssignor",
    "assignor",
    "assignors",
]

ASSIGNORS_CONFIG = "group.consumer.assignors"
DEFAULT_ASSIGNORS = "uniform,range"


class ConsumerGroupAssignor(Protocol):
    name: str

    def assign(
        self, group: GroupSpec, topics: Mapping[uuid.UUID, TopicMetadata]
    ) -> GroupAssignment: ...


_BUILT_IN: dict[str, ConsumerGroupAssignor] = {
    a.name: a for a in (UniformAssignor(), RangeAssignor())
}


class UnsupportedAssignor(LookupError):
    """No server-side assignor has this name (UNSUPPORTED_ASSIGNOR)."""

    def __init__(self, name: str, offered: Iterable[str]) -> None:
        super().__init__(
            f"no server-side assignor is named {name!r}; offered: {', '.join(offered)}"
        )
        self.name = name


def assignors(names: str = DEFAULT_ASSIGNORS) -> dict[str, ConsumerGroupAssignor]:
    """The assignors a ``group.consumer.assignors`` value lists, in its order
    (the first is the default). Raises UnsupportedAssignor for an unknown name."""
    offered: dict[str, ConsumerGroupAssignor] = {}
    for name in (n.strip() for n in names.split(",")):
        if not name:
            continue
        found = _BUILT_IN.get(name)
        if found is None:
            raise UnsupportedAssignor(name, _BUILT_IN)
        offered[name] = found
    if not offered:
        raise ValueError(f"{ASSIGNORS_CONFIG} lists no assignor")
    return offered


def assignor(
    name: str | None, offered: Mapping[str, ConsumerGroupAssignor] | None = None
) -> ConsumerGroupAssignor:
    """The assignor a member asks for; None or "" asks for the default (the
    first offered). Raises UnsupportedAssignor for a name not offered."""
    if offered is None:
        offered = _DEFAULT
    if not name:
        return next(iter(offered.values()))
    found = offered.get(name)
    if found is None:
        raise UnsupportedAssignor(name, offered)
    return found


_DEFAULT = assignors()
