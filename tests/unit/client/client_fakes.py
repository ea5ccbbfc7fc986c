"""A scripted stand-in for the brokers a ConsumerCoordinator talks to.

Every request the coordinator sends is recorded; the answer is the next one
queued for that request type (an exception to raise, a response, or a function
of the request, which may be a coroutine function), else a default that lets a
lone member join and commit.
Responses are plain namespaces with the fields the client reads.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from types import SimpleNamespace as NS
from typing import Any

from kgroups.assignors.protocol import Assignment, TopicPartition, encode_assignment
from kgroups.client.cluster import ClusterMetadata, TopicInfo
from kgroups.client.connection import ConnectionClosed
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.coordinator import ConsumerCoordinator
from kgroups.client.coordinator_link import CoordinatorLink
from kgroups.client.subscription_state import SubscriptionState
from kgroups.errors import ErrorCode

Reply = Any


class FakeConnection:
    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker
        self.closed = False

    def version_for(self, api_key: int, lowest: int, highest: int) -> int:
        return highest

    async def send(self, request: Any, *, version: int | None = None, **_: Any) -> Any:
        if self.closed:
            raise ConnectionClosed("closed")
        await asyncio.sleep(0)
        name = type(request).__name__.removesuffix("Request")
        self.broker.sent.append((name, request))
        queued = self.broker.replies.get(name)
        reply: Reply = queued.pop(0) if queued else self.broker.default(name, request)
        if isinstance(reply, BaseException):
            if isinstance(reply, ConnectionError):
                self.closed = True
            raise reply
        if callable(reply):
            reply = reply(request)
        if inspect.isawaitable(reply):
            # The broker answers once something else has happened meanwhile.
            reply = await reply
        return reply

    async def close(self) -> None:
        self.closed = True


class FakeBroker:
    def __init__(self, partitions: int = 4) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.replies: dict[str, list[Reply]] = {}
        self.metadata = ClusterMetadata(
            brokers={0: ("fake", 9092)},
            topics={"t": TopicInfo("t", dict.fromkeys(range(partitions), 0))},
        )
        self.generation = 0
        self.connections: list[FakeConnection] = []

    def queue(self, name: str, *replies: Reply) -> None:
        self.replies.setdefault(name, []).extend(replies)

    def requests(self, name: str) -> list[Any]:
        return [r for n, r in self.sent if n == name]

    async def any_connection(self) -> FakeConnection:
        return await self.connect("fake", 9092)

    async def connect(self, host: str, port: int) -> FakeConnection:
        conn = FakeConnection(self)
        self.connections.append(conn)
        return conn

    async def refresh(self, topics: list[str] | None = None, auto_create: bool = False) -> None:
        pass

    def default(self, name: str, request: Any) -> Any:
        return getattr(self, f"_default_{name}")(request)

    def _default_FindCoordinator(self, request: Any) -> Any:
        return found(ErrorCode.none)

    def _default_JoinGroup(self, request: Any) -> Any:
        self.generation += 1
        member = request.member_id or "member-1"
        members = (
            NS(
                member_id=member,
                group_instance_id=request.group_instance_id,
                metadata=request.protocols[0].metadata,
            ),
        )
        return joined(
            self.generation,
            member,
            leader=member,
            members=members,
            protocol=request.protocols[0].name,
        )

    def _default_SyncGroup(self, request: Any) -> Any:
        mine = [a.assignment for a in request.assignments if a.member_id == request.member_id]
        return synced(mine[0] if mine else b"", request.protocol_name)

    def _default_Heartbeat(self, request: Any) -> Any:
        return NS(error_code=ErrorCode.none)

    def _default_LeaveGroup(self, request: Any) -> Any:
        return NS(error_code=ErrorCode.none, members=())

    def _default_OffsetCommit(self, request: Any) -> Any:
        return committed(request, ErrorCode.none)

    def _default_OffsetFetch(self, request: Any) -> Any:
        return NS(groups=(NS(error_code=ErrorCode.none, topics=()),))


def found(error: ErrorCode) -> Any:
    return NS(
        coordinators=(NS(error_code=error, node_id=0, host="fake", port=9092, error_message=None),)
    )


def joined(
    generation: int,
    member: str,
    *,
    leader: str,
    members: tuple[Any, ...] = (),
    protocol: str = "range",
    error: ErrorCode = ErrorCode.none,
) -> Any:
    return NS(
        error_code=error,
        generation_id=generation,
        member_id=member,
        leader=leader,
        protocol_type="consumer",
        protocol_name=protocol,
        members=members,
    )


def join_error(error: ErrorCode, member: str = "") -> Any:
    return joined(-1, member, leader="", error=error)


def synced(
    assignment: bytes, protocol: str | None = "range", error: ErrorCode = ErrorCode.none
) -> Any:
    return NS(
        error_code=error, protocol_type="consumer", protocol_name=protocol, assignment=assignment
    )


def assignment(*partitions: int, topic: str = "t") -> bytes:
    return encode_assignment(Assignment([TopicPartition(topic, p) for p in partitions]))


def committed(request: Any, error: ErrorCode) -> Any:
    return NS(
        topics=tuple(
            NS(
                name=t.name,
                partitions=tuple(
                    NS(partition_index=p.partition_index, error_code=error) for p in t.partitions
                ),
            )
            for t in request.topics
        )
    )


def heartbeat(error: ErrorCode) -> Any:
    return NS(error_code=error)


def make_coordinator(
    broker: FakeBroker, listener: Any = None, **config: Any
) -> tuple[ConsumerCoordinator, SubscriptionState]:
    settings = {
        "bootstrap.servers": "fake:9092",
        "group.id": "g",
        "session.timeout.ms": 1000,
        "heartbeat.interval.ms": 20,
        "retry.backoff.ms": 5,
        "request.timeout.ms": 1000,
        "max.poll.interval.ms": 5000,
        "partition.assignment.strategy": "range",
        **config,
    }
    consumer_config = ConsumerConfig.from_dict(settings)
    subscriptions = SubscriptionState()
    subscriptions.subscribe(["t"], listener)
    # The loop's clock: virtual under run_virtual, so timers need no real waiting.
    clock = asyncio.get_running_loop().time
    link = CoordinatorLink(
        "g",
        broker,
        connect=broker.connect,
        request_timeout_ms=1000,
        retry_backoff_ms=5,
        clock=clock,
    )
    coordinator = ConsumerCoordinator(consumer_config, subscriptions, broker, link, clock=clock)
    return coordinator, subscriptions


async def until(condition: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)
