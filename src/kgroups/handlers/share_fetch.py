"""ShareFetch (KIP-932): acknowledgements first, then records acquired for
the member, with long polling.

The request's share session epoch says what it is (share_partitions/
sessions.py): 0 opens a session with the partitions it names (and may not
carry acknowledgements), N > 0 continues one (adding partitions, forgetting
others), -1 closes it after its acknowledgements; the member's acquired
records are then released. A session error is the response's top-level
error, and nothing else is done.

Records are read from each partition of the session in turn, up to the
request's max_bytes and max_records (share_reads.py). With nothing acquired
the broker waits for an append to one of them, at most max_wait, as Fetch
does. With ``is_renew_ack`` (KIP-1222) the request only acknowledges.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from kio.schema.share_fetch.v2 import ShareFetchRequest, ShareFetchResponse
from kio.schema.share_fetch.v2.response import (
    AcquiredRecords,
    LeaderIdAndEpoch,
    PartitionData,
    ShareFetchableTopicResponse,
)
from kio.static.primitive import Records, i16, i32, i32Timedelta, i64

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.share_acks import acknowledge
from kgroups.handlers.share_groups import share_protocol_enabled
from kgroups.handlers.share_reads import PartitionRead, group_settings, read_and_acquire
from kgroups.partitions.log import NotInMemory
from kgroups.share_partitions.manager import PartitionKey
from kgroups.share_partitions.sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    SessionError,
    SessionPartition,
    ShareSession,
)

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

_EMPTY = cast(Records, b"")
_NOTHING = PartitionRead()
RECORD_LIMIT_MODE = 1


def fetch_error(code: ErrorCode, message: str | None = None) -> ShareFetchResponse:
    return ShareFetchResponse(
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=message,
        acquisition_lock_timeout=i32Timedelta.parse(datetime.timedelta(0)),
        responses=(),
        node_endpoints=(),
    )


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: ShareFetchRequest
) -> ShareFetchResponse:
    if not share_protocol_enabled(broker):
        return fetch_error(ErrorCode.unsupported_version, "Share groups are not enabled.")
    group_id = request.group_id or ""
    member_id = request.member_id or ""
    if not group_id.strip():
        return fetch_error(ErrorCode.invalid_request, "GroupId can't be empty.")
    if not member_id.strip():
        return fetch_error(ErrorCode.invalid_request, "MemberId can't be empty.")
    epoch = int(request.share_session_epoch)
    named = [(t.topic_id, int(p.partition_index)) for t in request.topics for p in t.partitions]
    acks = {
        (t.topic_id, int(p.partition_index)): p.acknowledgement_batches
        for t in request.topics
        for p in t.partitions
        if p.acknowledgement_batches
    }
    if epoch == INITIAL_EPOCH and acks:
        return fetch_error(ErrorCode.invalid_request, "Acknowledge data present on initial fetch.")
    sessions = broker.share_partitions.sessions
    try:
        if epoch == INITIAL_EPOCH:
            session = sessions.open(group_id, member_id, _only_known(named))
        else:
            session = sessions.use(group_id, member_id, epoch)
    except SessionError as e:
        return fetch_error(e.code, str(e))
    session.connection = ctx.connection
    now = broker.clock.now_ms()
    ack_errors = {
        key: ErrorCode.unknown_topic_id
        if key[0] is None
        else acknowledge(
            broker, group_id, member_id, key[0], key[1], batches, request.is_renew_ack, now
        )
        for key, batches in acks.items()
    }
    reads: dict[SessionPartition, PartitionRead] = {}
    if epoch == FINAL_EPOCH:
        broker.share_partitions.release_member(group_id, member_id)
    # Acknowledgements are answered once they would survive a restart.
    touched = _touched(broker, group_id, acks, released=epoch == FINAL_EPOCH)
    stored = await broker.share_state.persist_changes(touched)
    if stored is not ErrorCode.none:
        ack_errors = {key: stored for key in ack_errors}
    if epoch != FINAL_EPOCH:
        if epoch != INITIAL_EPOCH:
            _update(session, named, request)
            session.advance()
        if not request.is_renew_ack:
            reads = await _fetch(broker, session, request)
            # A share partition's start, set at its first fetch, is kept too.
            await broker.share_state.persist_changes(
                [(group_id, t, p) for t, p in session.partitions]
            )
    lock_ms = broker.share_partitions.config.record_lock_duration_ms
    own_lock = group_settings(broker, group_id).record_lock_duration_ms
    return ShareFetchResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        acquisition_lock_timeout=i32Timedelta.parse(
            datetime.timedelta(milliseconds=own_lock if own_lock is not None else lock_ms)
        ),
        responses=_topics(broker, reads, ack_errors, full=epoch == INITIAL_EPOCH, session=session),
        node_endpoints=(),
    )


def _touched(
    broker: BrokerApi,
    group_id: str,
    acks: Mapping[tuple[uuid.UUID | None, int], object],
    released: bool,
) -> list[PartitionKey]:
    """The share partitions a request's acknowledgements (or its member's
    release, at the end of its session) may have changed."""
    if released:
        return [key for key, _sp in broker.share_partitions.of_group(group_id)]
    return [(group_id, t, p) for t, p in acks if t is not None]


def _only_known(named: list[tuple[uuid.UUID | None, int]]) -> list[SessionPartition]:
    return [(t, p) for t, p in named if t is not None]


def _update(
    session: ShareSession, named: list[tuple[uuid.UUID | None, int]], request: ShareFetchRequest
) -> None:
    for key in _only_known(named):
        session.partitions[key] = None
    for forgotten in request.forgotten_topics_data:
        if forgotten.topic_id is None:
            continue
        for p in forgotten.partitions:
            session.partitions.pop((forgotten.topic_id, int(p)), None)


async def _fetch(
    broker: BrokerApi, session: ShareSession, request: ShareFetchRequest
) -> dict[SessionPartition, PartitionRead]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.max_wait.total_seconds()
    settings = group_settings(broker, session.group_id)
    record_limit = int(request.share_acquire_mode) == RECORD_LIMIT_MODE
    while True:
        names = [
            (topic.name, p)
            for t, p in session.partitions
            if (topic := broker.topics.by_id(t)) is not None
        ]
        waiter = broker.append_waiters.register(names)
        try:
            now = broker.clock.now_ms()
            reads: dict[SessionPartition, PartitionRead] = {}
            budget = min(int(request.max_bytes), broker.config.get_int("fetch.max.bytes"))
            records_left = int(request.max_records)
            for key in list(session.partitions):
                read = read_and_acquire(
                    broker,
                    session.group_id,
                    session.member_id,
                    key[0],
                    key[1],
                    settings,
                    budget,
                    records_left,
                    record_limit,
                    now,
                )
                reads[key] = read
                budget -= len(read.records)
                records_left -= sum(r.last_offset - r.first_offset + 1 for r in read.acquired)
            got = any(r.acquired or r.error is not ErrorCode.none for r in reads.values())
            remaining = deadline - loop.time()
            if got or remaining <= 0 or broker.closing or int(request.min_bytes) <= 0:
                return reads
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.wait(), remaining)
        finally:
            broker.append_waiters.unregister(names, waiter)


def _topics(
    broker: BrokerApi,
    reads: dict[SessionPartition, PartitionRead],
    ack_errors: dict[tuple[uuid.UUID | None, int], ErrorCode],
    *,
    full: bool,
    session: ShareSession,
) -> tuple[ShareFetchableTopicResponse, ...]:
    """Partitions with records, an error or acknowledgements; every
    partition of a session just opened."""
    keys: dict[tuple[uuid.UUID | None, int], None] = {}
    if full:
        keys.update(dict.fromkeys(session.partitions))
    keys.update(
        dict.fromkeys(k for k, r in reads.items() if r.acquired or r.error is not ErrorCode.none)
    )
    keys.update(dict.fromkeys(ack_errors))
    by_topic: dict[uuid.UUID | None, list[PartitionData]] = {}
    for key in keys:
        topic_id, partition = key
        read = _NOTHING if topic_id is None else reads.get((topic_id, partition), _NOTHING)
        by_topic.setdefault(topic_id, []).append(
            PartitionData(
                partition_index=i32(partition),
                error_code=read.error,
                acknowledge_error_code=ack_errors.get(key, ErrorCode.none).value,
                current_leader=_leader(broker, topic_id, partition),
                records=cast(Records, read.records) if read.records else _EMPTY,
                acquired_records=tuple(
                    AcquiredRecords(
                        first_offset=i64(r.first_offset),
                        last_offset=i64(r.last_offset),
                        delivery_count=i16(r.delivery_count),
                    )
                    for r in read.acquired
                ),
            )
        )
    return tuple(
        ShareFetchableTopicResponse(topic_id=topic_id, partitions=tuple(partitions))
        for topic_id, partitions in by_topic.items()
    )


def _leader(broker: BrokerApi, topic_id: uuid.UUID | None, partition: int) -> LeaderIdAndEpoch:
    topic = None if topic_id is None else broker.topics.by_id(topic_id)
    epoch = -1
    if topic is not None:
        with contextlib.suppress(KafkaError, NotInMemory):
            epoch = broker.partitions.log(topic.name, partition).leader_epoch
    return LeaderIdAndEpoch(leader_id=i32(broker.broker_id), leader_epoch=i32(epoch))
