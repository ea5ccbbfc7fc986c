"""Who leads each partition of a coordinator's internal topic, and where
clients reach it.

FindCoordinator answers with the leader of the group's `__consumer_offsets`
partition, or of the transactional id's `__transaction_state` partition. A
broker alone leads every partition it holds (``ThisBroker``); in a cluster
the leadership view read from the store says which live broker leads which
partition (``ClusterLeaders``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from kgroups.runtime.broker_core import BrokerCore


class Leader(NamedTuple):
    broker_id: int
    host: str
    port: int


class ShardLeaders(Protocol):
    def leader_of(self, partition: int, listener: str) -> Leader | None:
        """The leader of the topic's partition ``partition`` at its
        address for the clients of ``listener``, or None while it has none or
        lacks that listener (clients are told COORDINATOR_NOT_AVAILABLE)."""
        ...


class HeldPartitions(Protocol):
    """The coordinator runtime, as far as ``ThisBroker`` needs it."""

    def leader_epoch(self, partition: int) -> int | None: ...


class ThisBroker:
    """A broker alone: it leads every partition its coordinator holds."""

    def __init__(self, broker: BrokerCore, runtime: HeldPartitions) -> None:
        self._broker = broker
        self._runtime = runtime

    def leader_of(self, partition: int, listener: str) -> Leader | None:
        if self._runtime.leader_epoch(partition) is None:
            return None
        broker = self._broker
        host, port = broker.advertised_listeners.get(listener, broker.advertised)
        return Leader(broker.broker_id, host, port)


class LeadershipView(Protocol):
    """What ``ClusterLeaders`` reads of the cluster member's view."""

    def leader(self, topic: str, partition: int) -> tuple[int, int]: ...

    def address(self, broker_id: int, listener: str) -> tuple[str, int] | None: ...


class ClusterLeaders:
    """In a cluster: the live leader of the partition, as last read from the store."""

    def __init__(self, view: LeadershipView, topic: str) -> None:
        self._view = view
        self._topic = topic

    def leader_of(self, partition: int, listener: str) -> Leader | None:
        node, _epoch = self._view.leader(self._topic, partition)
        address = None if node < 0 else self._view.address(node, listener)
        if address is None:
            return None
        return Leader(node, *address)
