"""ShareFetch (KIP-932): acknowledgements first, then records acquired for
the member, with long polling.

The request's share session epoch says what it is (share_partitions/
sessions.py): 0 opens a session with the partitions it names (and may not
carry acknowledgements), N > 0 continues one (adding partitions, forgetting
others), -1 closes it after its acknowledgements; the member's acquired
records are then released. A session error is the response's top-level
error, and nothing else is done.

Records are read from each partition of the session in turn, up to the
request's max_bytes and max_records (share_reads.py), as Kafka 4.2 does:
- max_bytes (at most ``fetch.max.bytes``, and what a consumer_byte_rate
  quota lets one fetch take, as for Fetch) or max_records of 0 asks for
  nothing: the answer comes at once, with no records (not KIP-74's one
  batch); a negative max_bytes is each partition's UNKNOWN_SERVER_ERROR;
- max_bytes is shared evenly among the partitions that may acquire; the
  first partition read (in session order moved left by the epoch, Kafka's
  round robin) gets its first batch whole, however large, the others no
  more than their share;
- the answer waits, at most max_wait, until min_bytes (at most max_bytes)
  of log wait to be acquired; a partition whose topic or partition is
  unknown is answered with its error and does not end the wait;
- records delivered the first time go out in ranges of about batch_size
  records, cut where log batches start (not in record-limit mode).
With ``is_renew_ack`` (KIP-1222) the request only acknowledges, and its
max_bytes, min_bytes, max_records and max_wait must be 0.
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
    NodeEndpoint,
    PartitionData,
    ShareFetchableTopicResponse,
)
from kio.static.primitive import Records, i16, i32, i32Timedelta, i64

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.fetch import quota_window_bytes
from kgroups.handlers.share_acks import acknowledge
from kgroups.handlers.share_groups import share_protocol_enabled
from kgroups.handlers.share_leaders import MOVED, current_leader, endpoints
from kgroups.handlers.share_reads import (
    GroupSettings,
    PartitionRead,
    fetchable,
    group_settings,
    pending_bytes,
    read_and_acquire,
    store_reads,
)
from kgroups.partitions.log import NotInMemory
from kgroups.protocol.types import BrokerId
from kgroups.share_partitions.manager import PartitionKey
from kgroups.share_partitions.sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    SessionError,
    SessionPartition,
    ShareSession,
    valid_member_id,
)

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

_EMPTY = cast(Records, b"")
_NOTHING = PartitionRead()
RECORD_LIMIT_MODE = 1
RENEW_ACK_VERSION = 2


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
    if not valid_member_id(member_id):
        return fetch_error(ErrorCode.invalid_request, "Invalid member id in the request.")
    if ctx.api_version >= RENEW_ACK_VERSION and request.is_renew_ack:
        not_zero = _renew_limits_not_zero(request)
        if not_zero:
            return fetch_error(
                ErrorCode.invalid_request,
                f"A renewing ShareFetch fetches nothing: {', '.join(not_zero)} must be 0.",
            )
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
    if epoch == INITIAL_EPOCH and broker.cluster is not None:
        await broker.share_state.drop_outdated([(group_id, t, p) for t, p in session.partitions])
    # Share partitions acknowledged here that this broker does not hold yet
    # take their state from the share coordinator first.
    await broker.share_state.ensure_loaded([(group_id, t, p) for t, p in acks if t is not None])
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
            reads = await _fetch(broker, session, request, quota_window_bytes(broker, ctx))
            # A share partition's start, set at its first fetch, is kept too.
            await broker.share_state.persist_changes(
                [(group_id, t, p) for t, p in session.partitions]
            )
    lock_ms = broker.share_partitions.config.record_lock_duration_ms
    own_lock = group_settings(broker, group_id).record_lock_duration_ms
    topics = _topics(broker, reads, ack_errors, full=epoch == INITIAL_EPOCH, session=session)
    return ShareFetchResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        acquisition_lock_timeout=i32Timedelta.parse(
            datetime.timedelta(milliseconds=own_lock if own_lock is not None else lock_ms)
        ),
        responses=topics,
        node_endpoints=_endpoints(broker, ctx.listener, topics),
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


def _renew_limits_not_zero(request: ShareFetchRequest) -> list[str]:
    limits = {
        "MaxBytes": int(request.max_bytes),
        "MinBytes": int(request.min_bytes),
        "MaxRecords": int(request.max_records),
        "MaxWaitMs": int(request.max_wait.total_seconds() * 1000),
    }
    return [name for name, value in limits.items() if value != 0]


def _unreadable(broker: BrokerApi, session: ShareSession) -> dict[SessionPartition, PartitionRead]:
    """The session's partitions of unknown topics or partitions, with their errors."""
    errors: dict[SessionPartition, PartitionRead] = {}
    for key in session.partitions:
        topic = broker.topics.by_id(key[0])
        if topic is None:
            errors[key] = PartitionRead(ErrorCode.unknown_topic_id)
            continue
        try:
            broker.partitions.log(topic.name, key[1])
        except KafkaError as e:
            errors[key] = PartitionRead(e.error_code)
        except NotInMemory:
            pass
    return errors


async def _fetch(
    broker: BrokerApi, session: ShareSession, request: ShareFetchRequest, quota_bytes: int | None
) -> dict[SessionPartition, PartitionRead]:
    max_bytes = min(int(request.max_bytes), broker.config.get_int("fetch.max.bytes"))
    if quota_bytes is not None:
        max_bytes = min(max_bytes, quota_bytes)
    max_records = int(request.max_records)
    if max_bytes == 0 or max_records == 0:
        return {}  # nothing asked for: no records, no wait
    errors = _unreadable(broker, session)
    not_loaded = await broker.share_state.ensure_loaded(
        [(session.group_id, t, p) for t, p in session.partitions if (t, p) not in errors]
    )
    for (_group, t, p), error in not_loaded.items():
        errors[(t, p)] = PartitionRead(error)
    readable = _rotated(
        [key for key in session.partitions if key not in errors],
        int(request.share_session_epoch),
    )
    if not readable:
        return errors
    group_id = session.group_id
    settings = group_settings(broker, group_id)
    if max_bytes < 0:
        now = broker.clock.now_ms()
        refused = PartitionRead(
            ErrorCode.unknown_server_error, message="ShareFetch MaxBytes must be positive."
        )
        return errors | {
            key: refused
            for key in readable
            if fetchable(broker, group_id, key[0], key[1], settings, now)
        }
    min_bytes = min(int(request.min_bytes), max_bytes)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.max_wait.total_seconds()
    names = [(topic.name, p) for t, p in readable if (topic := broker.topics.by_id(t)) is not None]
    while True:
        # Registered before the look, so an append or a release after it wakes us.
        waiter = broker.append_waiters.register(names)
        try:
            now = broker.clock.now_ms()
            fetching = [
                key
                for key in readable
                if fetchable(broker, group_id, key[0], key[1], settings, now)
            ]
            share = max_bytes // max(len(fetching), 1)
            remaining = deadline - loop.time()
            if (
                remaining <= 0
                or broker.closing
                or _has_bytes(broker, group_id, fetching, settings, share, min_bytes)
            ):
                from_store = await store_reads(broker, group_id, fetching, settings, share)
                now = broker.clock.now_ms()
                return errors | _read(
                    broker, session, request, fetching, settings, max_bytes, now, from_store
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.wait(), remaining)
        finally:
            broker.append_waiters.unregister(names, waiter)


def _rotated(partitions: list[SessionPartition], epoch: int) -> list[SessionPartition]:
    """Kafka's round robin: the partitions in session order, moved left by
    the request's epoch, so that over a session's fetches each partition in
    turn reads first (and gets its first batch whatever max_bytes)."""
    if epoch < 1 or not partitions:
        return partitions
    at = epoch % len(partitions)
    return partitions[at:] + partitions[:at]


def _has_bytes(
    broker: BrokerApi,
    group_id: str,
    fetching: list[SessionPartition],
    settings: GroupSettings,
    share: int,
    min_bytes: int,
) -> bool:
    """Whether ``min_bytes`` of log wait to be acquired, each partition
    counting up to its ``share`` of max_bytes."""
    waiting = 0
    for topic_id, partition in fetching:
        if waiting >= min_bytes:
            break
        # No more is read than the bytes still missing.
        cap = min(share, min_bytes - waiting)
        waiting += pending_bytes(broker, group_id, topic_id, partition, settings, cap)
    return waiting >= min_bytes


def _read(
    broker: BrokerApi,
    session: ShareSession,
    request: ShareFetchRequest,
    fetching: list[SessionPartition],
    settings: GroupSettings,
    max_bytes: int,
    now: int,
    from_store: dict[SessionPartition, bytes],
) -> dict[SessionPartition, PartitionRead]:
    """Each partition reads up to its share of max_bytes and what is left
    of it; until one has read records, its first batch comes whole."""
    share = max_bytes // max(len(fetching), 1)
    record_limit = int(request.share_acquire_mode) == RECORD_LIMIT_MODE
    reads: dict[SessionPartition, PartitionRead] = {}
    budget = max_bytes
    records_left = int(request.max_records)
    min_one = True
    for key in fetching:
        read = read_and_acquire(
            broker,
            session.group_id,
            session.member_id,
            key[0],
            key[1],
            settings,
            min(share, budget),
            records_left,
            record_limit,
            now,
            min_one=min_one,
            batch_size=int(request.batch_size),
            from_store=from_store.get(key),
        )
        reads[key] = read
        if read.records:
            min_one = False
        budget = max(0, budget - len(read.records))
        records_left -= sum(r.last_offset - r.first_offset + 1 for r in read.acquired)
    return reads


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
                error_message=read.message,
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
    leader, epoch = current_leader(broker, topic_id, partition)
    return LeaderIdAndEpoch(leader_id=i32(leader), leader_epoch=i32(epoch))


def _endpoints(
    broker: BrokerApi, listener: str, topics: tuple[ShareFetchableTopicResponse, ...]
) -> tuple[NodeEndpoint, ...]:
    """The endpoints of the leaders named for partitions that moved."""
    moved = [
        int(p.current_leader.leader_id)
        for t in topics
        for p in t.partitions
        if p.error_code in MOVED or ErrorCode(p.acknowledge_error_code) in MOVED
    ]
    return tuple(
        NodeEndpoint(node_id=BrokerId(node), host=host, port=i32(port))
        for node, host, port in endpoints(broker, listener, moved)
    )
