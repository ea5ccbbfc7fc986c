"""The task that keeps a KIP-848 member in its group: it sends a
ConsumerGroupHeartbeat whenever ``ConsumerMembership`` says one is due (at
once to join or acknowledge, else every interval the coordinator gave), one at
a time, and hands each answer back to it. It also finds the coordinator when it
is lost, and notices when the application stopped polling for longer than
max.poll.interval.ms (the member then leaves, so that others take its
partitions). Everything it decides is decided by the membership; this is the IO.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from kgroups.client.consumer_membership import ConsumerMembership
from kgroups.client.coordinator_link import CoordinatorLink
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis

__all__ = ["HEARTBEAT_VERSIONS", "HeartbeatManager"]

log = logging.getLogger(__name__)

HEARTBEAT_VERSIONS = (0, 1)
"""v1 if the coordinator has it (the member chooses its id), else v0."""

_IDLE = 1.0
"""How long the task sleeps when nothing is due (it is woken sooner on change)."""


class HeartbeatManager:
    def __init__(
        self,
        membership: ConsumerMembership,
        link: CoordinatorLink,
        *,
        request_timeout_ms: int,
        retry_backoff_ms: int,
        on_poll_expired: Callable[[], Awaitable[None]],
        clock: Callable[[], float],
    ) -> None:
        self.membership = membership
        self.link = link
        self.request_timeout = request_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self._on_poll_expired = on_poll_expired
        self._clock = clock
        self._wakeup = asyncio.Event()
        self._stopped = False
        self.answered = asyncio.Event()
        """Set at every heartbeat answer: poll() waits on it while joining."""

    def wake(self) -> None:
        """Something changed (joined, reconciled, left): look again at once."""
        self._wakeup.set()

    def stop(self) -> None:
        """The loop ends at its next turn (also when a cancellation of its task
        is lost, as asyncio.wait_for may lose one before Python 3.12)."""
        self._stopped = True
        self._wakeup.set()

    async def run(self) -> None:
        member = self.membership
        while member.fatal_error is None and not self._stopped:
            self._wakeup.clear()
            now = self._clock()
            if member.poll_expired(now):
                log.warning(
                    "group %s: max.poll.interval.ms passed without a poll; leaving the group. "
                    "Process less per poll (max.poll.records) or allow more time.",
                    member.group_id,
                )
                await self._on_poll_expired()
                continue
            due = member.time_to_heartbeat(now)
            if due is not None and self.link.unknown():
                found = False
                with contextlib.suppress(KafkaError):
                    found = await self.link.ensure_ready(now + self.retry_backoff)
                if not found:
                    await asyncio.sleep(self.retry_backoff)
                continue
            if due == 0.0:
                await self.send()
                continue
            wait = _IDLE if due is None else due
            if member.in_group():
                wait = min(wait, max(0.0, member.time_to_poll_expiry(now)) + 0.001)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), max(wait, 0.001))

    async def send(self) -> None:
        """One heartbeat and its answer."""
        member = self.membership
        try:
            version = self.link.version_for(apis.CONSUMER_GROUP_HEARTBEAT, *HEARTBEAT_VERSIONS)
            request, sent = member.heartbeat_request(version, self._clock())
            response = await self.link.send(
                request,
                apis.CONSUMER_GROUP_HEARTBEAT,
                version,
                version,
                timeout=self.request_timeout,
            )
        except KafkaError as e:
            log.info("group %s: heartbeat failed: %s", member.group_id, e)
            member.on_heartbeat_failed(self._clock(), e)
            return
        error = response.error_code
        if error in (ErrorCode.not_coordinator, ErrorCode.coordinator_not_available):
            self.link.mark_unknown(f"{error.name} from ConsumerGroupHeartbeat")
        elif error != ErrorCode.none:
            log.info(
                "group %s: heartbeat answered %s: %s",
                member.group_id,
                error.name,
                response.error_message,
            )
        member.on_heartbeat_response(response, sent, self._clock())
        self.answered.set()
