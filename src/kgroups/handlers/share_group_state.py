"""The group coordinator's side of its share groups' share state, as Kafka
4.2's GroupMetadataManager does it: the partitions a share group is
assigned have their state initialized at the share coordinator before the
members fetch them, and a share group deleted, or its start offsets deleted
for a topic, has that state deleted.

- **Initialization.** After a ShareGroupHeartbeat, the partitions of the
  group's target assignment not yet initialized are marked initializing
  (record 15, ShareGroupStatePartitionMetadata), their state is
  initialized (InitializeShareGroupState at the group epoch, start offset
  -1: where ``share.auto.offset.reset`` says), and they are marked
  initialized. A partition whose state already exists (its leader made it
  first, or the group is older than record 15) is only marked. The
  heartbeat's answer waits for this, at most ``_INIT_WAIT_S``; what is not
  done by then is done at a later heartbeat.
- **Deletion.** DeleteGroups of an empty share group deletes the state of
  every partition of the topics record 15 names, then the group;
  DeleteShareGroupOffsets deletes the state of the topics' partitions and
  takes them out of record 15.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kgroups.coordinator.share.records import ShareStatePlan, TopicPartitions
from kgroups.errors import ErrorCode, KafkaError
from kgroups.share_coordinator.answers import UNINITIALIZED_START_OFFSET

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

log = logging.getLogger(__name__)

_INIT_WAIT_S = 5.0


async def initialize_assigned(broker: BrokerApi, ctx: RequestContext, group_id: str) -> None:
    """Initialize the share state of the group's newly assigned partitions."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(_initialize(broker, ctx, group_id), _INIT_WAIT_S)


async def _initialize(broker: BrokerApi, ctx: RequestContext, group_id: str) -> None:
    try:
        plan: ShareStatePlan = await broker.coordinator.call(
            group_id,
            ctx,
            lambda shard, c, now: shard.share_state_to_initialize(group_id, c, now),
        )
    except KafkaError:
        return
    if plan.error or not plan.partitions:
        return
    persister = broker.share_state.persister

    async def one(topic_id: uuid.UUID, partition: int) -> bool:
        key = (group_id, topic_id, partition)
        summary = await persister.summary(key)
        if summary.error is not ErrorCode.none:
            return False
        if summary.start_offset != UNINITIALIZED_START_OFFSET or summary.state_epoch > 0:
            return True  # its state exists already
        answer = await persister.initialize(key, plan.group_epoch, UNINITIALIZED_START_OFFSET)
        return answer.error in (ErrorCode.none, ErrorCode.fenced_state_epoch)

    keys = [(t, p) for t in plan.partitions for p in t.partitions]
    results = await asyncio.gather(*(one(t.topic_id, p) for t, p in keys))
    done: dict[uuid.UUID, list[int]] = {}
    names = {t.topic_id: t.topic_name for t in plan.partitions}
    for (t, p), ok in zip(keys, results, strict=True):
        if ok:
            done.setdefault(t.topic_id, []).append(p)
    if not done:
        return
    finished = tuple(TopicPartitions(t, names[t], tuple(ps)) for t, ps in done.items())
    with contextlib.suppress(KafkaError):
        await broker.coordinator.call(
            group_id,
            ctx,
            lambda shard, c, now: shard.share_state_initialized(group_id, finished, c, now),
        )


async def delete_group_state(broker: BrokerApi, ctx: RequestContext, group_id: str) -> ErrorCode:
    """Before DeleteGroups of a share group: delete the state of its
    partitions; the error that keeps the group (NONE: go on)."""
    try:
        plan: ShareStatePlan = await broker.coordinator.call(
            group_id, ctx, lambda shard, c, now: shard.share_state_partitions(group_id, c, now)
        )
    except KafkaError as e:
        return e.error_code
    if plan.error or not plan.empty:
        return ErrorCode.none  # not a share group, or not empty: the shard answers
    return await _delete(broker, group_id, {t.topic_id for t in plan.partitions})


async def delete_topics_state(
    broker: BrokerApi, ctx: RequestContext, group_id: str, topic_ids: Iterable[uuid.UUID]
) -> ErrorCode:
    """DeleteShareGroupOffsets: the share state of the topics goes."""
    wanted = frozenset(topic_ids)
    error = await _delete(broker, group_id, set(wanted))
    if error is ErrorCode.none:
        with contextlib.suppress(KafkaError):
            await broker.coordinator.call(
                group_id,
                ctx,
                lambda shard, c, now: shard.share_state_forgotten(group_id, wanted, c, now),
            )
    return error


async def _delete(broker: BrokerApi, group_id: str, topic_ids: set[uuid.UUID]) -> ErrorCode:
    """Every partition of the topics, whether its state exists or not (a
    delete of no state is no error)."""
    persister = broker.share_state.persister
    keys = []
    for topic_id in topic_ids:
        topic = broker.topics.by_id(topic_id)
        if topic is not None:
            keys += [(group_id, topic_id, p) for p in range(topic.partitions)]
    answers = await asyncio.gather(*(persister.delete(k) for k in keys))
    for answer in answers:
        if answer.error not in (ErrorCode.none, ErrorCode.unknown_topic_or_partition):
            log.warning("deleting share state of group %s failed: %s", group_id, answer.error)
            return answer.error
    return ErrorCode.none
