"""A share consumer's share session with one broker (KIP-932): the partitions
it fetches there and the epoch of its next request.

Epoch 0 opens the session with every partition wanted (it may carry no
acknowledgements); each next request carries the next epoch and names only
what changed: partitions added, partitions with acknowledgements, and
partitions forgotten. ShareAcknowledge uses the session without changing
its partitions; epoch -1 closes it. A session the broker no longer knows
(SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH) is opened again.
Requests of one session go one at a time (``lock``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Mapping
from datetime import timedelta

from kio.schema.share_acknowledge.v2 import ShareAcknowledgeRequest
from kio.schema.share_acknowledge.v2.request import AcknowledgementBatch as AckBatchEntity
from kio.schema.share_acknowledge.v2.request import AcknowledgePartition, AcknowledgeTopic
from kio.schema.share_fetch.v2 import ShareFetchRequest
from kio.schema.share_fetch.v2.request import (
    AcknowledgementBatch,
    FetchPartition,
    FetchTopic,
    ForgottenTopic,
)
from kio.schema.types import GroupId
from kio.static.primitive import i8, i32, i32Timedelta, i64

from kgroups.client.share_acknowledgements import AckBatch
from kgroups.errors import ErrorCode

__all__ = ["ShareSession"]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

SharePartition = tuple[uuid.UUID, int]

_LOST = (ErrorCode.share_session_not_found, ErrorCode.invalid_share_session_epoch)


def _by_topic(
    partitions: Iterable[SharePartition],
) -> dict[uuid.UUID, list[int]]:
    out: dict[uuid.UUID, list[int]] = {}
    for topic_id, partition in sorted(partitions):
        out.setdefault(topic_id, []).append(partition)
    return out


class ShareSession:
    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.epoch = INITIAL_EPOCH
        self.partitions: frozenset[SharePartition] = frozenset()
        """Those the broker's session holds."""
        self.lock = asyncio.Lock()

    @property
    def open(self) -> bool:
        return self.epoch != INITIAL_EPOCH

    def fetch_request(
        self,
        group_id: str,
        member_id: str,
        wanted: frozenset[SharePartition],
        acks: Mapping[SharePartition, list[AckBatch]],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        max_records: int,
        record_limit: bool,
    ) -> ShareFetchRequest:
        """The next ShareFetch; ``acks`` must be empty while the session is not open."""
        named: set[SharePartition] = set(wanted)
        forgotten: frozenset[SharePartition] = frozenset()
        if self.open:
            named = set(wanted - self.partitions) | set(acks)
            forgotten = self.partitions - wanted
        topics = tuple(
            FetchTopic(
                topic_id=topic_id,
                partitions=tuple(
                    FetchPartition(
                        partition_index=i32(p),
                        acknowledgement_batches=tuple(
                            AcknowledgementBatch(
                                first_offset=i64(first),
                                last_offset=i64(last),
                                acknowledge_types=(i8(t),),
                            )
                            for first, last, t in acks.get((topic_id, p), ())
                        ),
                    )
                    for p in partitions
                ),
            )
            for topic_id, partitions in _by_topic(named).items()
        )
        return ShareFetchRequest(
            group_id=GroupId(group_id),
            member_id=member_id,
            share_session_epoch=i32(self.epoch),
            max_wait=i32Timedelta.parse(timedelta(milliseconds=max_wait_ms)),
            min_bytes=i32(min_bytes),
            max_bytes=i32(max_bytes),
            max_records=i32(max_records),
            batch_size=i32(max_records),
            share_acquire_mode=i8(1 if record_limit else 0),
            topics=topics,
            forgotten_topics_data=tuple(
                ForgottenTopic(topic_id=t, partitions=tuple(i32(p) for p in ps))
                for t, ps in _by_topic(forgotten).items()
            ),
        )

    def acknowledge_request(
        self,
        group_id: str,
        member_id: str,
        acks: Mapping[SharePartition, list[AckBatch]],
        *,
        closing: bool = False,
    ) -> ShareAcknowledgeRequest:
        return ShareAcknowledgeRequest(
            group_id=GroupId(group_id),
            member_id=member_id,
            share_session_epoch=i32(FINAL_EPOCH if closing else self.epoch),
            topics=tuple(
                AcknowledgeTopic(
                    topic_id=topic_id,
                    partitions=tuple(
                        AcknowledgePartition(
                            partition_index=i32(p),
                            acknowledgement_batches=tuple(
                                AckBatchEntity(
                                    first_offset=i64(first),
                                    last_offset=i64(last),
                                    acknowledge_types=(i8(t),),
                                )
                                for first, last, t in acks[(topic_id, p)]
                            ),
                        )
                        for p in partitions
                    ),
                )
                for topic_id, partitions in _by_topic(acks).items()
            ),
        )

    def on_answer(self, error: ErrorCode, wanted: frozenset[SharePartition] | None) -> None:
        """Move on after an answer (``wanted`` is what a ShareFetch asked for;
        None for ShareAcknowledge, which leaves the partitions as they are)."""
        if error in _LOST:
            self.reset()
            return
        if error != ErrorCode.none:
            return
        if wanted is not None:
            self.partitions = wanted
        self.epoch = 1 if self.epoch == _MAX_EPOCH else self.epoch + 1

    def reset(self) -> None:
        self.epoch = INITIAL_EPOCH
        self.partitions = frozenset()
