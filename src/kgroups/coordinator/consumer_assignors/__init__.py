"""Server-side partition assignors of the consumer group protocol (KIP-848).

Pure functions of a group spec and topic metadata to a target assignment:
``uniform`` (the default) and ``range``, as Kafka 4.x's group coordinator
implements them, deterministic whatever the order of the input.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgroups.coordinator.consumer_assignors.range import RangeAssignor
    from kgroups.coordinator.consumer_assignors.registry import (
        ASSIGNORS_CONFIG,
        DEFAULT_ASSIGNORS,
        ConsumerGroupAssignor,
        UnsupportedAssignor,
        assignor,
        assignors,
    )
    from kgroups.coordinator.consumer_assignors.spec import (
        EMPTY_ASSIGNMENT,
        Assignment,
        AssignorError,
        GroupAssignment,
        GroupSpec,
        MemberSpec,
        TopicMetadata,
    )
    from kgroups.coordinator.consumer_assignors.uniform import UniformAssignor

# Each name is imported on first use: the broker imports a module of this
# package at start and needs the rest only with the first group request.
_HOMES = {
    "RangeAssignor": "kgroups.coordinator.consumer_assignors.range",
    "ASSIGNORS_CONFIG": "kgroups.coordinator.consumer_assignors.registry",
    "DEFAULT_ASSIGNORS": "kgroups.coordinator.consumer_assignors.registry",
    "ConsumerGroupAssignor": "kgroups.coordinator.consumer_assignors.registry",
    "UnsupportedAssignor": "kgroups.coordinator.consumer_assignors.registry",
    "assignor": "kgroups.coordinator.consumer_assignors.registry",
    "assignors": "kgroups.coordinator.consumer_assignors.registry",
    "EMPTY_ASSIGNMENT": "kgroups.coordinator.consumer_assignors.spec",
    "Assignment": "kgroups.coordinator.consumer_assignors.spec",
    "AssignorError": "kgroups.coordinator.consumer_assignors.spec",
    "GroupAssignment": "kgroups.coordinator.consumer_assignors.spec",
    "GroupSpec": "kgroups.coordinator.consumer_assignors.spec",
    "MemberSpec": "kgroups.coordinator.consumer_assignors.spec",
    "TopicMetadata": "kgroups.coordinator.consumer_assignors.spec",
    "UniformAssignor": "kgroups.coordinator.consumer_assignors.uniform",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


__all__ = [
    "ASSIGNORS_CONFIG",
    "DEFAULT_ASSIGNORS",
    "EMPTY_ASSIGNMENT",
    "Assignment",
    "AssignorError",
    "ConsumerGroupAssignor",
    "GroupAssignment",
    "GroupSpec",
    "MemberSpec",
    "RangeAssignor",
    "TopicMetadata",
    "UniformAssignor",
    "UnsupportedAssignor",
    "assignor",
    "assignors",
]
