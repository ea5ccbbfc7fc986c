"""OffsetCommit, TxnOffsetCommit and OffsetFetch on classic groups.

Commits are fenced like Kafka's: a group managed by the coordinator takes
commits only from members of its current generation, while generation -1
commits ("simple" consumers, admin tools) go to groups without members.
Every stored offset is a record applied through the replay path; the ways
offsets go are in offset_removal.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kio.schema.errors import ErrorCode
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup
from kio.schema.offset_fetch.v9.response import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)
from kio.schema.txn_offset_commit.v5.request import TxnOffsetCommitRequest
from kio.schema.txn_offset_commit.v5.response import (
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)

from kgroups.coordinator.commit_request import CommitPartition, CommitRequest
from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.current_member import (
    validate_current_member,
    validate_generation_member,
)
from kgroups.coordinator.effects import Effects
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.group_records import offset_key, offset_record
from kgroups.coordinator.group_table import GroupTable
from kgroups.coordinator.membership import Membership
from kgroups.coordinator.offsets import CommittedOffset, TopicPartition
from kgroups.coordinator.records import NO_LEADER_EPOCH, encode_offset_commit_value_v3
from kgroups.coordinator.responses import NO_THROTTLE, commit_response
from kgroups.coordinator.state import (
    CREATE_AND_STORE,
    MEMBERS_ONLY,
    NOT_FOUND_FROM_V9,
    READ_OFFSETS,
    STORE_AND_KEEP_ALIVE,
    STORE_OFFSETS,
    GroupState,
    Request,
    answers_by_state,
    rules_by_state,
)
from kgroups.coordinator.txn_offsets import TransactionalOffsets
from kgroups.protocol.types import GroupId, TopicName, i32, i64

NO_OFFSET = -1
NO_METADATA = ""
# Building a NamedTuple straight from a tuple skips its generated __new__: the
# commit path builds two per partition.
_new_tuple = tuple.__new__


class OffsetHandlers:
    def __init__(
        self,
        table: GroupTable,
        membership: Membership,
        config: CoordinatorConfig,
        partition_exists: Callable[[str, int], bool],
        txn: TransactionalOffsets | None = None,
    ) -> None:
        self._table = table
        self._txn = TransactionalOffsets() if txn is None else txn
        # The groups with pending transactional offsets, which a plain commit checks.
        self._pending_groups = self._txn.by_group
        self._membership = membership
        self._config = config
        self._partition_exists = partition_exists
        # Each commit looks its group's state up once, not once per partition.
        self._member_commits = answers_by_state(
            Request.OFFSET_COMMIT,
            {
                STORE_AND_KEEP_ALIVE: self._store_and_keep_alive,
                NOT_FOUND_FROM_V9: _not_found_from_v9,
            },
        )
        self._simple_commits = rules_by_state(
            Request.SIMPLE_OFFSET_COMMIT,
            {
                STORE_OFFSETS: _store_offsets,
                CREATE_AND_STORE: self._create_and_store,
                MEMBERS_ONLY: _members_only,
            },
        )
        self._fetches = rules_by_state(Request.OFFSET_FETCH, {READ_OFFSETS: _read_offsets})

    # -- OffsetCommit ------------------------------------------------------

    def offset_commit(
        self,
        req: CommitRequest,
        ctx: RequestContext,
        now: int,
        fx: Effects,
        retention_ms: int = -1,
        *,
        fenced: bool = True,
    ) -> None:
        """``retention_ms`` is the retention time of OffsetCommit v2-v4 (-1: the
        broker's offsets.retention.minutes); later versions dropped it (KIP-211).
        ``fenced=False``: the caller checked the committer (a consumer group's
        member epoch)."""
        # One pass over the partitions, without a per-partition answer: most
        # commits answer every partition alike, and only the exceptions are kept.
        exceptions: dict[tuple[str, int], ErrorCode] = {}
        to_commit: list[tuple[TopicPartition, CommitPartition]] = []
        partition_exists = self._partition_exists
        for topic in req.topics:
            name = topic.name
            for p in topic.partitions:
                if partition_exists(name, p.partition_index):
                    tp = _new_tuple(TopicPartition, (name, p.partition_index))
                    to_commit.append((tp, p))
                else:
                    exceptions[name, p.partition_index] = ErrorCode.unknown_topic_or_partition
        if not to_commit:
            fx.reply(ctx.reply_to, commit_response(req.topics, ErrorCode.none, exceptions))
            return

        error = self._commit_error(req, ctx.api_version, now) if fenced else None
        if error is not None:
            fx.reply(ctx.reply_to, commit_response(req.topics, error, exceptions))
            return

        group_id = req.group_id
        max_metadata = self._config.offset_metadata_max_bytes
        committed: list[tuple[TopicPartition, CommittedOffset]] = []
        if retention_ms < 0:
            # The usual commit: each offset's record (value v3) made in the
            # same pass, and the offsets applied as replay would apply them.
            records = fx.records
            for tp, p in to_commit:
                metadata = p.committed_metadata
                if not metadata:
                    metadata = NO_METADATA
                elif _java_length(metadata) > max_metadata:
                    exceptions[tp] = ErrorCode.offset_metadata_too_large
                    continue
                offset = p.committed_offset
                epoch = p.committed_leader_epoch
                committed.append(
                    (tp, _new_tuple(CommittedOffset, (offset, epoch, metadata, now, None)))
                )
                records.append(
                    (
                        offset_key(group_id, tp),
                        encode_offset_commit_value_v3(
                            offset, epoch if epoch >= 0 else NO_LEADER_EPOCH, metadata, now
                        ),
                    )
                )
            self._table.apply_offsets(group_id, committed)
            self._stored(group_id, committed, req, ctx, fx, exceptions)
            return
        expire = now + retention_ms
        for tp, p in to_commit:
            metadata = p.committed_metadata
            if not metadata:  # empty or null, as nearly every commit's
                metadata = NO_METADATA
            elif _java_length(metadata) > max_metadata:
                exceptions[tp] = ErrorCode.offset_metadata_too_large
                continue
            committed.append(
                (
                    tp,
                    _new_tuple(
                        CommittedOffset,
                        (p.committed_offset, p.committed_leader_epoch, metadata, now, expire),
                    ),
                )
            )
        fx.emit_offsets(group_id, committed, self._table)
        self._stored(group_id, committed, req, ctx, fx, exceptions)

    def _stored(
        self,
        group_id: str,
        committed: list[tuple[TopicPartition, CommittedOffset]],
        req: CommitRequest,
        ctx: RequestContext,
        fx: Effects,
        exceptions: dict[tuple[str, int], ErrorCode],
    ) -> None:
        """The commit's offsets are applied: settle pending transactional ones, answer."""
        if group_id in self._pending_groups:
            self._txn.plain_commit(group_id, [tp for tp, _offset in committed])
        fx.reply(ctx.reply_to, commit_response(req.topics, ErrorCode.none, exceptions))

    def _commit_error(self, req: CommitRequest, version: int, now: int) -> ErrorCode | None:
        """What the group's state answers the commit; None: store it."""
        generation = req.generation_id_or_member_epoch
        group = self._table.get(req.group_id)
        if generation < 0:
            # Not using group management (simple consumers, admin tools).
            state = GroupState.DEAD if group is None else group.state
            return self._simple_commits[state](group, req, now)
        if group is None:
            answer = self._member_commits[GroupState.DEAD]
        else:
            error = validate_generation_member(
                group, req.member_id, req.group_instance_id, generation
            )
            if error is not None:
                return error
            answer = self._member_commits[group.state]
        if isinstance(answer, ErrorCode):
            return answer
        return answer(group, req.member_id, version, now)

    # -- TxnOffsetCommit ---------------------------------------------------

    def txn_offset_commit(
        self,
        req: TxnOffsetCommitRequest,
        ctx: RequestContext,
        now: int,
        fx: Effects,
        *,
        fenced: bool = True,
    ) -> None:
        """Offsets committed inside the producer's transaction: written to the
        log (the shell puts them in a transactional batch of their own) and
        kept pending until the transaction's marker. ``fenced=False``: the
        caller checked the committer (a consumer group's member epoch)."""
        error = self._txn_commit_error(req, now) if fenced else None
        answers: dict[tuple[str, int], ErrorCode] = {}
        if error is None:
            max_metadata = self._config.offset_metadata_max_bytes
            for topic in req.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    metadata = NO_METADATA if p.committed_metadata is None else p.committed_metadata
                    if not self._partition_exists(tp.topic, tp.partition):
                        answers[tp] = ErrorCode.unknown_topic_or_partition
                    elif _java_length(metadata) > max_metadata:
                        answers[tp] = ErrorCode.offset_metadata_too_large
                    else:
                        offset = CommittedOffset(
                            p.committed_offset, p.committed_leader_epoch, metadata, now
                        )
                        record = offset_record(req.group_id, tp, offset)
                        fx.records.append(record)
                        self._txn.add(req.producer_id, req.group_id, tp, record)
        fx.reply(ctx.reply_to, txn_commit_response(req, error or ErrorCode.none, answers))

    def _txn_commit_error(self, req: TxnOffsetCommitRequest, now: int) -> ErrorCode | None:
        """Kafka's checks of a transactional commit; None: store it.

        Unlike a plain commit, one without member id and generation (v0-v2)
        is taken whatever the group's state, and a rebalance in progress does
        not refuse it."""
        group = self._table.get(req.group_id)
        generation = req.generation_id
        if group is None:
            if generation >= 0:
                return ErrorCode.illegal_generation
            self._table.create(req.group_id, now)
            return None
        if group.is_in(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        if generation < 0 and group.is_in(GroupState.EMPTY):
            return None
        if generation >= 0 or req.member_id or req.group_instance_id is not None:
            return validate_generation_member(
                group, req.member_id, req.group_instance_id, generation
            )
        return None

    def _store_and_keep_alive(
        self, group: ClassicGroup | None, member_id: str, version: int, now: int
    ) -> ErrorCode | None:
        assert group is not None
        member = group.get(member_id)
        self._membership.reschedule_session(group, member, now, member.session_timeout_ms)
        return None

    def _create_and_store(self, group: ClassicGroup | None, req: CommitRequest, now: int) -> None:
        self._table.create(req.group_id, now)

    # -- OffsetFetch -------------------------------------------------------

    def offset_fetch(
        self, request: OffsetFetchRequestGroup, require_stable: bool = False
    ) -> OffsetFetchResponse:
        """``require_stable``: a partition with a transactional offset pending
        answers UNSTABLE_OFFSET_COMMIT (the client retries) instead of its
        last committed offset."""
        # Offsets are read whatever the group's state: simple consumers have no members.
        group = self._table.get(request.group_id)
        offsets = self._fetches[GroupState.DEAD if group is None else group.state](group)
        if request.topics is None:
            wanted: Iterable[TopicPartition] = list(offsets)
        else:
            wanted = [
                TopicPartition(topic.name, partition)
                for topic in request.topics
                for partition in topic.partition_indexes
            ]
        unstable = (
            self._txn.partitions(request.group_id)
            if require_stable and request.group_id in self._pending_groups
            else ()
        )
        by_topic: dict[str, list[OffsetFetchResponsePartitions]] = {}
        for tp in wanted:
            fetched = (
                _unstable(tp.partition)
                if tp in unstable
                else _fetched(tp.partition, offsets.get(tp))
            )
            by_topic.setdefault(tp.topic, []).append(fetched)
        return fetch_response(
            request.group_id,
            tuple(
                OffsetFetchResponseTopics(name=TopicName(topic), partitions=tuple(partitions))
                for topic, partitions in by_topic.items()
            ),
            ErrorCode.none,
        )


def _store_offsets(group: ClassicGroup | None, req: CommitRequest, now: int) -> None:
    """Stored as they come."""


def _not_found_from_v9(
    group: ClassicGroup | None, member_id: str, version: int, now: int
) -> ErrorCode:
    return ErrorCode.group_id_not_found if version >= 9 else ErrorCode.illegal_generation


def _members_only(group: ClassicGroup | None, req: CommitRequest, now: int) -> ErrorCode:
    assert group is not None
    error = validate_current_member(group, req.member_id, req.group_instance_id)
    # A member's generation is never -1.
    return ErrorCode.illegal_generation if error is None else error


def _read_offsets(group: ClassicGroup | None) -> Mapping[TopicPartition, CommittedOffset]:
    return {} if group is None else group.offsets


def _java_length(text: str) -> int:
    """Length as Kafka measures offset metadata: in UTF-16 code units."""
    if text.isascii():  # the usual case, one unit per character
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _fetched(partition: int, committed: CommittedOffset | None) -> OffsetFetchResponsePartitions:
    if committed is None:
        return OffsetFetchResponsePartitions(
            partition_index=i32(partition),
            committed_offset=i64(NO_OFFSET),
            committed_leader_epoch=i32(-1),
            metadata=NO_METADATA,
            error_code=ErrorCode.none,
        )
    return OffsetFetchResponsePartitions(
        partition_index=i32(partition),
        committed_offset=i64(committed.offset),
        committed_leader_epoch=i32(committed.leader_epoch),
        metadata=committed.metadata,
        error_code=ErrorCode.none,
    )


def _unstable(partition: int) -> OffsetFetchResponsePartitions:
    return OffsetFetchResponsePartitions(
        partition_index=i32(partition),
        committed_offset=i64(NO_OFFSET),
        committed_leader_epoch=i32(-1),
        metadata=NO_METADATA,
        error_code=ErrorCode.unstable_offset_commit,
    )


def txn_commit_response(
    req: TxnOffsetCommitRequest, error: ErrorCode, exceptions: Mapping[tuple[str, int], ErrorCode]
) -> TxnOffsetCommitResponse:
    """``error`` for every partition, unless ``exceptions`` names another."""
    return TxnOffsetCommitResponse(
        throttle_time=NO_THROTTLE,
        topics=tuple(
            TxnOffsetCommitResponseTopic(
                name=topic.name,
                partitions=tuple(
                    TxnOffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=exceptions.get((topic.name, p.partition_index), error),
                    )
                    for p in topic.partitions
                ),
            )
            for topic in req.topics
        ),
    )


def fetch_response(
    group_id: str, topics: tuple[OffsetFetchResponseTopics, ...], error: ErrorCode
) -> OffsetFetchResponse:
    return OffsetFetchResponse(
        throttle_time=NO_THROTTLE,
        groups=(
            OffsetFetchResponseGroup(group_id=GroupId(group_id), topics=topics, error_code=error),
        ),
    )
