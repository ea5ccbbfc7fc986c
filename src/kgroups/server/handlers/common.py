"""Small values every handler needs."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from kio.static.primitive import i32Timedelta

from kgroups.protocol.types import i32

if TYPE_CHECKING:
    from kgroups.server.broker_core import BrokerCore

NO_THROTTLE = i32Timedelta.parse(timedelta(0))
# Kafka's "authorized operations not requested" marker.
OPERATIONS_OMITTED = i32(-2147483648)


def own_address(broker: BrokerCore, listener: str) -> tuple[str, int]:
    """This broker's address as the clients of a listener must use it."""
    return broker.advertised_listeners.get(listener, broker.advertised)


def with_own_address(
    broker: BrokerCore, listener: str, addresses: dict[int, tuple[str, int]]
) -> dict[int, tuple[str, int]]:
    """Cluster addresses (as registered), this broker's replaced by the listener's."""
    if broker.broker_id not in addresses:
        return addresses
    return {**addresses, broker.broker_id: own_address(broker, listener)}
