"""Small values every handler needs."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from kio.static import primitive
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol.types import i32
from kgroups.security.authorizer import OPERATIONS, ResourceType

if TYPE_CHECKING:
    from kgroups.runtime.broker_core import BrokerCore

NO_THROTTLE = i32Timedelta.parse(timedelta(0))
# Kafka's "authorized operations not requested" marker.
OPERATIONS_OMITTED = i32(-2147483648)


def every_operation(rtype: ResourceType) -> primitive.i32:
    """The authorized operations Kafka answers with no authorizer: all a resource knows."""
    return i32(sum(1 << op for op in OPERATIONS[rtype]))


def with_every_group_operation(groups: tuple[Any, ...], asked: bool) -> tuple[Any, ...]:
    """Described groups as Kafka answers them with no authorizer when asked for
    their authorized operations: every group operation on each group found
    (the authorizer's guard narrows them)."""
    if not asked:
        return groups
    every = every_operation(ResourceType.GROUP)
    return tuple(
        dataclasses.replace(g, authorized_operations=every) if g.error_code == ErrorCode.none else g
        for g in groups
    )


def own_address(broker: BrokerCore, listener: str) -> tuple[str, int]:
    """This broker's address as the clients of a listener must use it."""
    return broker.advertised_listeners.get(listener, broker.advertised)


def with_own_address(
    broker: BrokerCore, listener: str, addresses: dict[int, tuple[str, int]]
) -> dict[int, tuple[str, int]]:
    """Cluster addresses on a listener, this broker's as it advertises it now."""
    registered = addresses.get(broker.broker_id)
    if registered is None:
        return addresses
    own = own_address(broker, listener)
    return addresses if registered == own else {**addresses, broker.broker_id: own}


async def still_leader(broker: BrokerCore, topic: str, partition: int) -> bool:
    """Whether this broker leads the partition, as the partitions' home (in a
    cluster: the store) says now, not as this broker's last view said."""
    try:
        plog = broker.partitions.log(topic, partition)
    except KafkaError:
        return False
    return await broker.partitions.confirm_leadership(topic, partition, plog)
