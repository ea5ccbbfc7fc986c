"""Finding a group's coordinator and talking to it (the discovery half of the Java
client's AbstractCoordinator).

FindCoordinator goes to any broker; the answer names the broker that hosts the
group's ``__consumer_offsets`` partition (or, with key type 1, the
transactional id's ``__transaction_state`` partition). The link then keeps a connection of
its own to that broker -- separate from the fetch connections, because a broker
answers one request per connection at a time and a JoinGroup may wait for
minutes -- and everything group-related goes over it.

When the coordinator moves (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) or the
connection drops, the caller marks it unknown and the next request rediscovers
it, retrying with ``retry.backoff.ms`` between attempts. Lookups are shared: a
poll and the heartbeat task asking at once send one FindCoordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from kio.static.primitive import i8

from kgroups.client.connection import BrokerConnection
from kgroups.client.exceptions import RetriableError
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis

__all__ = ["Connect", "CoordinatorLink", "GroupCluster"]

log = logging.getLogger(__name__)

Connect = Callable[[str, int], Awaitable[Any]]
"""Opens a connection to host:port (a BrokerConnection, or a test's fake)."""


class GroupCluster(Protocol):
    """The part of ClusterClient the group machinery uses."""

    async def any_connection(self) -> Any: ...

    async def refresh(self, topics: list[str] | None = None, auto_create: bool = False) -> None: ...

    @property
    def metadata(self) -> Any: ...


class CoordinatorLink:
    def __init__(
        self,
        group_id: str,
        cluster: GroupCluster,
        *,
        connect: Connect,
        request_timeout_ms: int,
        retry_backoff_ms: int,
        clock: Callable[[], float] = time.monotonic,
        key_type: int = 0,
    ) -> None:
        self.group_id = group_id
        self.key_type = key_type
        """0 finds a group's coordinator, 1 a transactional id's."""
        self.cluster = cluster
        self._connect = connect
        self.request_timeout = request_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self._clock = clock
        self.node_id: int | None = None
        self._conn: Any = None
        self._lookup: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self.on_discovered: Callable[[], None] = lambda: None

    def unknown(self) -> bool:
        if self._conn is not None and self._conn.closed:
            self.mark_unknown("the connection to the coordinator closed")
        return self._conn is None

    def mark_unknown(self, reason: str) -> None:
        if self._conn is None:
            return
        log.info("group %s: coordinator %s unknown: %s", self.group_id, self.node_id, reason)
        conn, self._conn, self.node_id = self._conn, None, None
        # Requests still in flight on the old connection fail when it closes.
        task = asyncio.get_running_loop().create_task(conn.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def ensure_ready(self, deadline: float | None) -> bool:
        """True once a coordinator is known; False if ``deadline`` passes first."""
        while self.unknown():
            if self._lookup is None or self._lookup.done():
                self._lookup = asyncio.get_running_loop().create_task(self._find())
            lookup = self._lookup
            remaining = None if deadline is None else max(0.0, deadline - self._clock())
            try:
                await asyncio.wait_for(asyncio.shield(lookup), remaining)
            except TimeoutError:
                return not self.unknown()
            error = lookup.exception()
            if error is not None:
                raise error
            if deadline is not None and self._clock() >= deadline:
                break
        return not self.unknown()

    async def _find(self) -> None:
        """One FindCoordinator round; a retriable failure sleeps the backoff and
        returns (the caller loops), anything else is raised."""
        try:
            conn = await self.cluster.any_connection()
            version = conn.version_for(apis.FIND_COORDINATOR, 4, 4)
            response = await asyncio.wait_for(
                conn.send(
                    FindCoordinatorRequest(
                        key_type=i8(self.key_type), coordinator_keys=(self.group_id,)
                    ),
                    version=version,
                ),
                self.request_timeout,
            )
            found = response.coordinators[0]
            if found.error_code == ErrorCode.none:
                coordinator = await asyncio.wait_for(
                    self._connect(found.host, found.port), self.request_timeout
                )
                self._conn, self.node_id = coordinator, found.node_id
                log.info(
                    "group %s: discovered coordinator %s at %s:%s",
                    self.group_id,
                    found.node_id,
                    found.host,
                    found.port,
                )
                self.on_discovered()
                return
            if not found.error_code.retriable:
                raise KafkaError(found.error_code, found.error_message)
            log.debug("group %s: coordinator lookup failed: %s", self.group_id, found.error_code)
        except OSError as e:  # includes timeouts and lost connections
            log.debug("group %s: coordinator lookup failed: %s", self.group_id, e)
        await asyncio.sleep(self.retry_backoff)

    def version_for(self, api_key: int, lowest: int, highest: int) -> int:
        """The version a request to the coordinator goes as (its fields may depend on it)."""
        conn = self._conn
        if conn is None or conn.closed:
            self.unknown()
            raise RetriableError(ErrorCode.coordinator_not_available, "coordinator unknown")
        return int(conn.version_for(api_key, lowest, highest))

    async def send(
        self, request: Any, api_key: int, lowest: int, highest: int, timeout: float
    ) -> Any:
        """Send to the coordinator; a lost or timed-out request marks it unknown."""
        conn = self._conn
        if conn is None or conn.closed:
            self.unknown()
            raise RetriableError(ErrorCode.coordinator_not_available, "coordinator unknown")
        version = conn.version_for(api_key, lowest, highest)
        try:
            return await asyncio.wait_for(conn.send(request, version=version), timeout)
        except OSError as e:
            if self._conn is conn:
                self.mark_unknown(f"request failed: {e!r}")
            raise RetriableError(ErrorCode.network_exception, str(e) or repr(e)) from e

    async def close(self) -> None:
        if self._lookup is not None:
            self._lookup.cancel()
            with contextlib.suppress(BaseException):
                await self._lookup
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
        for task in list(self._closing):
            with contextlib.suppress(BaseException):
                await task


async def open_connection(
    host: str, port: int, client_id: str, security: ClientSecurity = PLAINTEXT
) -> BrokerConnection:
    return await BrokerConnection.open(host, port, client_id=client_id, security=security)
