"""Committing offsets to the group and reading them back (the offset half of the Java
client's ConsumerCoordinator).

A member commits under its generation and member id, so that the coordinator
can refuse a commit from a member that has been replaced: the partitions may
already belong to someone else. For the same reason a commit stays bound to the
generation it was made in: if the member has rejoined by the time it is sent
(or retried), the partitions may have moved and their new owner committed
newer offsets, so it fails with CommitFailedError rather than go out under the
new generation, which the coordinator would accept. How each error is met
follows the Java client:

- COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION: retry.
- NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT: rediscover the
  coordinator, retry.
- REBALANCE_IN_PROGRESS: rejoin; the commit fails with RebalanceInProgressError.
- UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION: the membership is gone: reset it (if no
  newer generation came meanwhile) and rejoin; the commit fails with
  CommitFailedError.
- FENCED_INSTANCE_ID: fatal.

Under group.protocol=consumer (KIP-848) the generation is the member epoch, and
OffsetCommit goes as v9 or newer (the coordinator checks the epoch only there).
STALE_MEMBER_EPOCH fails a commit with StaleMemberEpochError, which the commit
made before partitions are revoked retries with the member's new epoch; an
OffsetFetch also carries member id and epoch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from kio.schema.offset_commit.v9 import OffsetCommitRequest
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v9 import OffsetFetchRequest
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64

from kgroups.client.consumer_record import OffsetAndMetadata, TopicPartition
from kgroups.client.coordinator_link import CoordinatorLink
from kgroups.client.exceptions import (
    CommitFailedError,
    FencedInstanceIdError,
    RebalanceInProgressError,
    RetriableError,
    StaleMemberEpochError,
)
from kgroups.client.group_membership import Generation
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis

__all__ = ["CommitterMembership", "OffsetCommitter"]

log = logging.getLogger(__name__)

_RETRY = (ErrorCode.coordinator_load_in_progress, ErrorCode.unknown_topic_or_partition)
_REDISCOVER = (
    ErrorCode.not_coordinator,
    ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out,
)


class CommitterMembership(Protocol):
    """What the committer needs from the member it commits for."""

    instance_id: str | None
    commits_bound_to_generation: bool
    """Whether a commit fails when the generation changed between making and
    sending it (classic), or goes out under the current epoch (consumer)."""

    def fetch_identity(self) -> tuple[str | None, int]:
        """Member id and generation/epoch for OffsetFetch ((None, -1): none)."""
        ...

    def generation_for_new_commit(self) -> Generation:
        """The generation a commit made now belongs to (checked when it is sent)."""
        ...

    def generation_for_commit(self) -> Generation:
        """The generation to commit under; raises when the member is between
        generations (RebalanceInProgressError) or out of the group (CommitFailedError)."""
        ...

    def request_rejoin(self, reason: str) -> None: ...

    def reset_generation_on_error(self, error: ErrorCode, sent: Generation) -> None: ...


class OffsetCommitter:
    def __init__(
        self,
        link: CoordinatorLink,
        membership: CommitterMembership,
        *,
        request_timeout_ms: int,
        retry_backoff_ms: int,
        require_stable: bool,
        lowest_commit_version: int = 7,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.link = link
        self.membership = membership
        self.request_timeout = request_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.require_stable = require_stable
        self.lowest_commit_version = lowest_commit_version
        self._clock = clock

    async def commit_once(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], made_in: Generation
    ) -> None:
        """One OffsetCommit of offsets taken in generation ``made_in``; raises
        RetriableError when another attempt may succeed."""
        if not offsets:
            return
        generation = self.membership.generation_for_commit()
        if self.membership.commits_bound_to_generation and generation != made_in:
            raise CommitFailedError(
                ErrorCode.illegal_generation,
                f"the commit was made in generation {made_in.generation_id} and the member "
                f"has rejoined since (generation {generation.generation_id}): its partitions "
                "may have moved, so the offsets are not committed",
            )
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for tp, om in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                OffsetCommitRequestPartition(
                    partition_index=i32(tp.partition),
                    committed_offset=i64(om.offset),
                    committed_leader_epoch=i32(om.leader_epoch),
                    committed_metadata=om.metadata,
                )
            )
        request = OffsetCommitRequest(
            group_id=GroupId(self.link.group_id),
            generation_id_or_member_epoch=i32(generation.generation_id),
            member_id=generation.member_id,
            group_instance_id=self.membership.instance_id,
            topics=tuple(
                OffsetCommitRequestTopic(name=TopicName(t), partitions=tuple(ps))
                for t, ps in by_topic.items()
            ),
        )
        response = await self.link.send(
            request, apis.OFFSET_COMMIT, self.lowest_commit_version, 9, timeout=self.request_timeout
        )
        for topic in response.topics:
            for p in topic.partitions:
                if p.error_code != ErrorCode.none:
                    self._raise_commit_error(
                        p.error_code, generation, topic.name, p.partition_index
                    )
        log.debug("group %s: committed %s", self.link.group_id, dict(offsets))

    def _raise_commit_error(
        self, error: ErrorCode, generation: Generation, topic: str, partition: int
    ) -> None:
        where = f"committing {topic}-{partition}"
        if error in _RETRY:
            raise RetriableError(error, where)
        if error in _REDISCOVER:
            self.link.mark_unknown(f"{error.name} from OffsetCommit")
            raise RetriableError(error, where)
        if error == ErrorCode.fenced_instance_id:
            raise FencedInstanceIdError(self.membership.instance_id)
        if error == ErrorCode.stale_member_epoch:
            raise StaleMemberEpochError()
        if error == ErrorCode.rebalance_in_progress:
            self.membership.request_rejoin("the group is rebalancing (OffsetCommit)")
            raise RebalanceInProgressError()
        if error in (ErrorCode.unknown_member_id, ErrorCode.illegal_generation):
            self.membership.reset_generation_on_error(error, generation)
            raise CommitFailedError(error)
        raise KafkaError(error, where)

    async def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        deadline: float | None,
        *,
        retry_stale_epoch: bool = False,
    ) -> None:
        """Commit, retrying what can be retried until ``deadline`` -- all in the
        generation the member is in now. ``retry_stale_epoch``: a stale member
        epoch is retried too (with the epoch the heartbeat brings meanwhile)."""
        made_in = self.membership.generation_for_new_commit()
        while True:
            if not await self.link.ensure_ready(deadline):
                raise TimeoutError("the group coordinator was not found before the deadline")
            try:
                await self.commit_once(offsets, made_in)
                return
            except (RetriableError, StaleMemberEpochError) as e:
                if isinstance(e, StaleMemberEpochError) and not retry_stale_epoch:
                    raise
                if deadline is not None and self._clock() + self.retry_backoff >= deadline:
                    raise
            await asyncio.sleep(self.retry_backoff)

    async def fetch(
        self,
        partitions: set[TopicPartition],
        deadline: float | None,
        *,
        retry_stale_epoch: bool = False,
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (None where nothing is committed).
        ``retry_stale_epoch``: a stale member epoch or an unknown member is
        retried (the consumer looking up where to start: the Java client tries
        again on its next poll), else raised."""
        if not partitions:
            return {}
        while True:
            if not await self.link.ensure_ready(deadline):
                raise TimeoutError("the group coordinator was not found before the deadline")
            try:
                return await self._fetch_once(partitions)
            except (RetriableError, StaleMemberEpochError) as e:
                if isinstance(e, StaleMemberEpochError) and not retry_stale_epoch:
                    raise
                if deadline is not None and self._clock() + self.retry_backoff >= deadline:
                    raise
            await asyncio.sleep(self.retry_backoff)

    async def _fetch_once(
        self, partitions: set[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        member_id, member_epoch = self.membership.fetch_identity()
        request = OffsetFetchRequest(
            groups=(
                OffsetFetchRequestGroup(
                    group_id=GroupId(self.link.group_id),
                    member_id=member_id,
                    member_epoch=i32(member_epoch),
                    topics=tuple(
                        OffsetFetchRequestTopics(
                            name=TopicName(t), partition_indexes=tuple(i32(p) for p in ps)
                        )
                        for t, ps in by_topic.items()
                    ),
                ),
            ),
            require_stable=self.require_stable,
        )
        lowest = 8 if member_id is None else 9
        response = await self.link.send(request, apis.OFFSET_FETCH, lowest, 9, self.request_timeout)
        group = response.groups[0]
        self._check_fetch_error(group.error_code, "fetching committed offsets")
        out: dict[TopicPartition, OffsetAndMetadata | None] = dict.fromkeys(partitions)
        for topic in group.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                if p.error_code == ErrorCode.unknown_topic_or_partition:
                    log.warning(
                        "group %s: no committed offset for unknown %s", self.link.group_id, tp
                    )
                    continue
                self._check_fetch_error(p.error_code, f"fetching the offset of {tp}")
                if p.committed_offset >= 0:
                    out[tp] = OffsetAndMetadata(
                        p.committed_offset, p.metadata or "", p.committed_leader_epoch
                    )
        return out

    def _check_fetch_error(self, error: ErrorCode, where: str) -> None:
        if error == ErrorCode.none:
            return
        if error in (ErrorCode.coordinator_load_in_progress, ErrorCode.unstable_offset_commit):
            raise RetriableError(error, where)
        if error in (ErrorCode.stale_member_epoch, ErrorCode.unknown_member_id):
            raise StaleMemberEpochError(f"{where}: {error.name}")
        if error in _REDISCOVER:
            self.link.mark_unknown(f"{error.name} from OffsetFetch")
            raise RetriableError(error, where)
        raise KafkaError(error, where)
