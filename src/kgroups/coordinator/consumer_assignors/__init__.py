"""Server-side partition assignors of the consumer group protocol (KIP-848).

Pure functions of a group spec and topic metadata to a target assignment:
``uniform`` (the default) and ``range``, as Kafka 4.x's group coordinator
implements them, deterministic whatever the order of the input.
"""

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
