"""The live brokers of the cluster as this broker tells its clients of them.

Per listener of this broker, each live broker's address on it, worked out when
the live brokers change rather than for each Metadata, DescribeCluster or
FindCoordinator. A broker without the listener is left out of its map, as Kafka
leaves it out of that listener's answers.
"""

from __future__ import annotations

from collections.abc import Iterable

from kgroups.cluster.broker_leases import LiveBroker

Addresses = dict[int, tuple[str, int]]
_NONE: Addresses = {}


class LiveBrokers:
    def __init__(self, listener_names: Iterable[str], inter_broker_listener: str) -> None:
        self._listener_names = tuple(listener_names)
        self._inter_broker_listener = inter_broker_listener
        self._seen: list[LiveBroker] = []
        self._on: dict[str, Addresses] = {}
        self.ids: frozenset[int] = frozenset()

    def observe(self, live: list[LiveBroker]) -> None:
        """Take the live brokers just read from the store."""
        if live == self._seen:
            return
        self._seen = live
        self.ids = frozenset(b.broker_id for b in live)
        self._on = {name: self._addresses_on(name, live) for name in self._listener_names}

    def on(self, listener: str) -> Addresses:
        """Live brokers at their address on ``listener``; shared: not to be changed."""
        return self._on.get(listener, _NONE)

    def _addresses_on(self, listener: str, live: list[LiveBroker]) -> Addresses:
        out = {}
        for b in live:
            address = b.address_on(listener, self._inter_broker_listener)
            if address is not None:
                out[b.broker_id] = host_port(address)
        return out


def host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)
