"""A share consumer's membership of its share group (the Java client's
ShareMembershipManager and ShareHeartbeatRequestManager, much reduced).

A task sends ShareGroupHeartbeat every interval the coordinator asks for.
The member names itself (a random id, as Kafka 4.1+ clients do) and joins
with epoch 0 and its subscribed topics; each answer brings its epoch and,
when it changed, its assignment: topic ids and partitions, taken at once
(share groups revoke nothing first). The subscription goes again only when
it changes. A fenced or unknown member joins again with epoch 0, keeping
its id; a coordinator that moved is found again. Leaving is epoch -1.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import uuid
from collections.abc import Callable

from kio.schema.share_group_heartbeat.v1 import ShareGroupHeartbeatRequest
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32

from kgroups.client.coordinator_link import CoordinatorLink
from kgroups.client.exceptions import RetriableError
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis

__all__ = ["ShareMembership"]

log = logging.getLogger(__name__)

JOIN_EPOCH = 0
LEAVE_EPOCH = -1

_REJOIN = (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id)
_COORDINATOR_MOVED = (
    ErrorCode.not_coordinator,
    ErrorCode.coordinator_not_available,
    ErrorCode.coordinator_load_in_progress,
)

SharePartition = tuple[uuid.UUID, int]


def new_member_id() -> str:
    """A random id written as Kafka writes a Uuid: URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ShareMembership:
    def __init__(
        self,
        link: CoordinatorLink,
        *,
        rack_id: str | None,
        request_timeout_ms: int,
        retry_backoff_ms: int,
        on_assignment: Callable[[], None] = lambda: None,
    ) -> None:
        self.link = link
        self.member_id = new_member_id()
        self.epoch = JOIN_EPOCH
        self.rack_id = rack_id
        self.subscription: tuple[str, ...] = ()
        self._sent_subscription: tuple[str, ...] | None = None
        self.assignment: frozenset[SharePartition] = frozenset()
        self.fatal_error: KafkaError | None = None
        self._interval = retry_backoff_ms / 1000
        self._timeout = request_timeout_ms / 1000
        self._backoff = retry_backoff_ms / 1000
        self._on_assignment = on_assignment
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def subscribe(self, topics: tuple[str, ...]) -> None:
        self.subscription = topics
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def check_fatal(self) -> None:
        if self.fatal_error is not None:
            raise self.fatal_error

    async def _run(self) -> None:
        while self.fatal_error is None:
            self._wake.clear()
            pause = self._interval
            try:
                await self._heartbeat()
            except RetriableError as e:
                log.info("share group %s: heartbeat failed: %s", self.link.group_id, e)
                pause = self._backoff
            except KafkaError as e:
                log.warning("share group %s: %s", self.link.group_id, e)
                self.fatal_error = e
                self._on_assignment()
                return
            except OSError as e:
                log.info("share group %s: heartbeat failed: %s", self.link.group_id, e)
                pause = self._backoff
            if self.epoch == JOIN_EPOCH and pause == self._interval:
                pause = 0.0  # fenced: join again at once
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), pause)

    async def _heartbeat(self) -> None:
        if not await self.link.ensure_ready(None):
            return
        joining = self.epoch == JOIN_EPOCH
        topics = self.subscription
        send_topics = joining or topics != self._sent_subscription
        request = ShareGroupHeartbeatRequest(
            group_id=GroupId(self.link.group_id),
            member_id=self.member_id,
            member_epoch=i32(self.epoch),
            rack_id=self.rack_id if joining else None,
            subscribed_topic_names=tuple(TopicName(t) for t in topics) if send_topics else None,
        )
        response = await self.link.send(request, apis.SHARE_GROUP_HEARTBEAT, 1, 1, self._timeout)
        code = response.error_code
        if code in _REJOIN:
            log.info("share group %s: %s, joining again", self.link.group_id, code.name)
            self.epoch = JOIN_EPOCH
            self._sent_subscription = None
            self._set_assignment(frozenset())
            return
        if code in _COORDINATOR_MOVED:
            self.link.mark_unknown(code.name)
            raise RetriableError(code, response.error_message or code.name)
        if code != ErrorCode.none:
            if code.retriable:
                raise RetriableError(code, response.error_message or code.name)
            raise KafkaError(code, response.error_message or code.name)
        if send_topics:
            self._sent_subscription = topics
        self.epoch = response.member_epoch
        self._interval = response.heartbeat_interval.total_seconds()
        if response.assignment is not None:
            self._set_assignment(
                frozenset(
                    (tp.topic_id, int(p))
                    for tp in response.assignment.topic_partitions
                    if tp.topic_id is not None
                    for p in tp.partitions
                )
            )

    def _set_assignment(self, assignment: frozenset[SharePartition]) -> None:
        if assignment != self.assignment:
            self.assignment = assignment
            self._on_assignment()

    async def leave(self) -> None:
        """Stop heartbeating and leave the group (epoch -1), if it was joined."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
            self._task = None
        if self.epoch == JOIN_EPOCH or self.link.unknown():
            self.subscription = ()
            return
        request = ShareGroupHeartbeatRequest(
            group_id=GroupId(self.link.group_id),
            member_id=self.member_id,
            member_epoch=i32(LEAVE_EPOCH),
        )
        try:
            await self.link.send(request, apis.SHARE_GROUP_HEARTBEAT, 1, 1, self._timeout)
        except (KafkaError, OSError) as e:
            log.info("share group %s: leaving failed: %s", self.link.group_id, e)
        self.epoch = JOIN_EPOCH
        self.subscription = ()
        self._sent_subscription = None
        self._set_assignment(frozenset())
