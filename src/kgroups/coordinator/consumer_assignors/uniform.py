"""The uniform assignor, Kafka's default server-side assignor (KIP-848).

Balanced first, sticky second: it keeps members' partitions wherever the
balance allows. It picks one of two builders, as Kafka does: one for groups
whose members all subscribe to the same topics, one for the others.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from kgroups.coordinator.consumer_assignors.ordering import by_member_id
from kgroups.coordinator.consumer_assignors.spec import GroupAssignment, GroupSpec, TopicMetadata
from kgroups.coordinator.consumer_assignors.uniform_heterogeneous import assign_heterogeneous
from kgroups.coordinator.consumer_assignors.uniform_homogeneous import assign_homogeneous

__all__ = ["UniformAssignor"]


class UniformAssignor:
    name = "uniform"

    def assign(
        self, group: GroupSpec, topics: Mapping[uuid.UUID, TopicMetadata]
    ) -> GroupAssignment:
        members = by_member_id(group.members)
        if group.is_homogeneous():
            return assign_homogeneous(members, topics)
        return assign_heterogeneous(members, topics)
