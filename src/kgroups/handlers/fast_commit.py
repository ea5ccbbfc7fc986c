"""Offset commits taken on the connection, without ``dispatch``.

An OffsetCommit whose partitions all exist is read by hand
(protocol/offset_commit_wire.py) and handed straight to its shard's
``offset_commit``, the very handler the general path calls, so it is checked
by the same rules (generation or member epoch, member id, group instance id,
the kind of group, ``offset.metadata.max.bytes``) and answered with the same
errors. Its records join the loop turn's append of the partition, and its
answer leaves once they are durable: for the usual answer (no error) bytes
encoded once per version and partitions, for any other the general path's
encoding. What is skipped is the kio decoding and encoding and the
request's trip through dispatch and the handler.

The general path takes every other commit: one naming a topic or partition
that does not exist, or a topic twice, a broker with an authorizer or client quotas, a frame
of a shape the reader does not take, a big request, a partition not served
here or loading; and every commit while faults are injected.
"""

from __future__ import annotations

from collections.abc import Coroutine
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from kio.schema.offset_commit.v9.response import OffsetCommitResponse

from kgroups.coordinator.responses import (
    CACHED_PARTITIONS,
    commit_response,
    uniform_commit_response,
)
from kgroups.errors import ErrorCode
from kgroups.handlers.big_requests import BIG_REQUEST_BYTES
from kgroups.protocol import apis
from kgroups.protocol.framing import frame
from kgroups.protocol.header import response_header
from kgroups.protocol.offset_commit_wire import WireCommitRequest, read_offset_commit
from kgroups.runtime.coordinator_driver import TIMED_OUT

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.shard_runtime import Reply

_FIRST_FLEXIBLE = 8
# A commit's topics with their partitions, in the request's order.
Layout = tuple[tuple[str, tuple[int, ...]], ...]


def answer_commit(
    broker: BrokerApi, request: bytes, client_host: str
) -> Coroutine[Any, Any, bytes] | None:
    """What completes with the response frame, or None: the request takes
    the general path."""
    if len(request) >= BIG_REQUEST_BYTES or not broker.quotas.table.is_empty():
        return None
    read = read_offset_commit(request)
    if read is None:
        return None
    commit = read.commit
    if not commit.group_id:
        return None
    topics = broker.topics
    layout = []
    partitions = 0
    for topic in commit.topics:
        found = topics.get(topic.name)
        if found is None:
            return None
        indexes = tuple([p.partition_index for p in topic.partitions])
        if indexes and (min(indexes) < 0 or max(indexes) >= found.partitions):
            return None
        layout.append((topic.name, indexes))
        partitions += len(indexes)
    if len(layout) > 1 and len({name for name, _ in layout}) < len(layout):
        # A topic named twice: the general path's own answers keep the two
        # apart where the coordinator's group them (a timed-out commit).
        return None
    reply = broker.coordinator.offset_commit_now(commit, read.version, read.client_id, client_host)
    if reply is None:
        return None
    return _answer(broker, read, tuple(layout), partitions, reply)


async def _answer(
    broker: BrokerApi, read: WireCommitRequest, layout: Layout, partitions: int, reply: Reply
) -> bytes:
    response: object = await reply
    if response is TIMED_OUT:
        # As ``call`` and the handler answer it: every partition timed out.
        response = commit_response(read.commit.topics, ErrorCode.request_timed_out, {})
    version = read.version
    if partitions <= CACHED_PARTITIONS and response is uniform_commit_response(
        layout, ErrorCode.none
    ):
        broker.stats.offset_commits += partitions
        payload = _committed(version, layout)
    else:
        assert isinstance(response, OffsetCommitResponse)
        broker.stats.offset_commits += sum(
            1 for t in response.topics for p in t.partitions if p.error_code == ErrorCode.none
        )
        payload = apis.codec(apis.OFFSET_COMMIT, version).encode_response(response)
    return frame(response_header(read.correlation_id, version >= _FIRST_FLEXIBLE) + payload)


@lru_cache(maxsize=1024)
def _committed(version: int, layout: Layout) -> bytes:
    """The body of the answer that every partition is committed."""
    response = uniform_commit_response(layout, ErrorCode.none)
    return apis.codec(apis.OFFSET_COMMIT, version).encode_response(response)
