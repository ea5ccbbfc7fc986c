"""Requests this broker sends the other brokers of its cluster.

Two kinds, as in Kafka: a transaction coordinator sends WriteTxnMarkers to the
leaders of its transactions' partitions, and a partition leader asks a
transactional id's coordinator whether a partition is in the producer's
transaction (AddPartitionsToTxn v4, verify only) before a transaction's first
batch is written. Each goes to a broker's inter-broker listener, at the
address the cluster store lists for it, over one connection per broker kept
open and opened again after a failure. A request that cannot be answered
(no address, no connection, no answer within ``request.timeout.ms``) raises
NETWORK_EXCEPTION: its caller retries, as Kafka's inter-broker senders do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from kgroups.client.connection import BrokerConnection, ConnectionClosed
from kgroups.client.security import ClientSecurity
from kgroups.errors import ErrorCode, KafkaError

__all__ = ["PeerBrokers"]

log = logging.getLogger(__name__)

# A broker's address for the inter-broker listener, or None while it has none.
Addresses = Callable[[int], tuple[str, int] | None]


class PeerBrokers:
    def __init__(
        self,
        broker_id: int,
        addresses: Addresses,
        security: ClientSecurity,
        timeout_ms: int,
    ) -> None:
        self._client_id = f"broker-{broker_id}"
        self._addresses = addresses
        self._security = security
        self._timeout_s = timeout_ms / 1000
        self._connections: dict[int, BrokerConnection] = {}
        self._opening: dict[int, asyncio.Lock] = {}

    async def send(self, broker_id: int, request: Any, lowest: int, highest: int) -> Any:
        """The broker's answer to ``request``, sent at the newest version of
        ``lowest..highest`` both sides serve."""
        conn = await self._connection(broker_id)
        try:
            version = conn.version_for(request.__api_key__, lowest, highest)
            return await asyncio.wait_for(conn.send(request, version=version), self._timeout_s)
        except (ConnectionClosed, OSError, TimeoutError) as e:
            await self._drop(broker_id, conn)
            raise KafkaError(ErrorCode.network_exception, f"broker {broker_id}: {e}") from None

    async def _connection(self, broker_id: int) -> BrokerConnection:
        lock = self._opening.setdefault(broker_id, asyncio.Lock())
        async with lock:  # one connection per broker, however many callers
            conn = self._connections.get(broker_id)
            if conn is not None and not conn.closed:
                return conn
            address = self._addresses(broker_id)
            if address is None:
                raise KafkaError(ErrorCode.network_exception, f"broker {broker_id} has no address")
            try:
                conn = await BrokerConnection.open(
                    *address,
                    client_id=self._client_id,
                    timeout=self._timeout_s,
                    security=self._security,
                )
            except Exception as e:  # refused, unreachable, TLS or SASL failure
                log.warning("cannot reach broker %d at %s:%d: %s", broker_id, *address, e)
                raise KafkaError(
                    ErrorCode.network_exception, f"broker {broker_id} unreachable: {e}"
                ) from None
            self._connections[broker_id] = conn
            return conn

    async def _drop(self, broker_id: int, conn: BrokerConnection) -> None:
        if self._connections.get(broker_id) is conn:
            del self._connections[broker_id]
        with contextlib.suppress(Exception):
            await conn.close()

    async def close(self) -> None:
        connections = list(self._connections.values())
        self._connections.clear()
        for conn in connections:
            with contextlib.suppress(Exception):
                await conn.close()
