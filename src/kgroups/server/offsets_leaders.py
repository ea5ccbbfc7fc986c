"""Who leads each `__consumer_offsets` partition, and where clients reach it.

FindCoordinator answers with the leader of the group's offsets partition.
A broker alone leads every partition it holds; in a cluster the leadership
view kept in the store says which broker leads which partition, and that view
stands in for ``ThisBroker``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from kgroups.server.broker_core import BrokerCore
    from kgroups.server.coordinator_runtime import CoordinatorRuntime


class Leader(NamedTuple):
    broker_id: int
    host: str
    port: int


class OffsetsLeaders(Protocol):
    def leader_of(self, partition: int) -> Leader | None:
        """The leader of `__consumer_offsets` partition ``partition``, or None
        while it has none (clients are told COORDINATOR_NOT_AVAILABLE)."""
        ...


class ThisBroker:
    """A broker alone: it leads every partition its coordinator holds."""

    def __init__(self, broker: BrokerCore, runtime: CoordinatorRuntime) -> None:
        self._broker = broker
        self._runtime = runtime

    def leader_of(self, partition: int) -> Leader | None:
        if self._runtime.leader_epoch(partition) is None:
            return None
        host, port = self._broker.advertised
        return Leader(self._broker.broker_id, host, port)
