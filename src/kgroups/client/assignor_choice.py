"""Which partition assignors a consumer offers, and which rebalance protocol follows.

``partition.assignment.strategy`` accepts the protocol names ("range",
"cooperative-sticky", ...) or the Java client's class names, so a Java
properties file works unchanged. The order is the member's preference, sent
as such in JoinGroup; the coordinator picks one every member offers.

The member's rebalance protocol is the most cooperative one that *every*
assignor it offers supports (the Java client's rule): a member that offers
both "range" and "cooperative-sticky" -- the default -- behaves eagerly even
when the group picks cooperative-sticky, so that it stays correct whichever
of the two the group ends up using.
"""

from __future__ import annotations

from collections.abc import Iterable

from kgroups.assignors.base import Assignor, RebalanceProtocol
from kgroups.assignors.registry import UnknownAssignor, by_name

__all__ = ["common_rebalance_protocol", "make_assignors", "protocol_name"]

_JAVA_CLASSES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def protocol_name(value: str) -> str:
    name = _JAVA_CLASSES.get(value, value)
    try:
        by_name(name)
    except UnknownAssignor:
        raise ValueError(f"no partition assignor is named {value!r}") from None
    return name


def make_assignors(names: Iterable[str]) -> list[Assignor]:
    return [by_name(name) for name in names]


def common_rebalance_protocol(assignors: Iterable[Assignor]) -> RebalanceProtocol:
    common: set[RebalanceProtocol] | None = None
    for assignor in assignors:
        supported = set(assignor.supported_protocols)
        common = supported if common is None else common & supported
    if not common:
        raise ValueError("the configured assignors share no rebalance protocol")
    return max(common)
