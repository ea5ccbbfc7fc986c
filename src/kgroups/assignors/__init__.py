"""Partition assignors of the "consumer" group protocol.

``range``, ``roundrobin``, ``sticky`` and ``cooperative-sticky`` behave like
the Java client's assignors of the same names, and the subscription and
assignment metadata they exchange is the Java client's, so kgroups consumers,
Java consumers and kafka-python consumers can share a group::

    from kgroups.assignors import Subscription, by_name

    assignor = by_name("cooperative-sticky")
    assignments = assignor.assign(
        {"orders": 6},
        {"member-a": Subscription(["orders"]), "member-b": Subscription(["orders"])},
    )
"""

from kgroups.assignors.base import Assignor, PartitionRacks, RebalanceProtocol
from kgroups.assignors.cooperative_sticky import CooperativeStickyAssignor
from kgroups.assignors.protocol import (
    LATEST_VERSION,
    NO_GENERATION,
    Assignment,
    ProtocolError,
    Subscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kgroups.assignors.range import RangeAssignor
from kgroups.assignors.registry import UnknownAssignor, by_name
from kgroups.assignors.roundrobin import RoundRobinAssignor
from kgroups.assignors.sticky import StickyAssignor

__all__ = [
    "LATEST_VERSION",
    "NO_GENERATION",
    "Assignment",
    "Assignor",
    "CooperativeStickyAssignor",
    "PartitionRacks",
    "ProtocolError",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "TopicPartition",
    "UnknownAssignor",
    "by_name",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]
