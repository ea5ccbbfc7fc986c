"""A shard driven on virtual time through the shell's own driver.

The broker's `CoordinatorDriver` holds the contract (order of appends,
durable-then-reply, failed appends, timers); this stand-in for the IO around
it appends to an in-memory log that is durable at once, records the replies
by their reply_to token, and can be told to fail the next append, so tests
read as a conversation with the coordinator.
"""

from __future__ import annotations

import datetime
import itertools
import struct
from dataclasses import dataclass, field
from typing import Any

from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_describe.v1.response import DescribedGroup as ConsumerDescribed
from kio.schema.consumer_group_heartbeat.v1.request import (
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)
from kio.schema.consumer_group_heartbeat.v1.response import ConsumerGroupHeartbeatResponse
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.describe_groups.v5.response import DescribedGroup
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.join_group.v9.response import JoinGroupResponse
from kio.schema.leave_group.v5.request import LeaveGroupRequest, MemberIdentity
from kio.schema.leave_group.v5.response import LeaveGroupResponse
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.list_groups.v5.response import ListGroupsResponse
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_commit.v9.response import OffsetCommitResponse
from kio.schema.offset_delete.v0.request import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from kio.schema.offset_delete.v0.response import OffsetDeleteResponse
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kio.schema.offset_fetch.v9.response import OffsetFetchResponse
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.schema.sync_group.v5.response import SyncGroupResponse
from kio.static.primitive import i32, i32Timedelta, i64

from kgroups.coordinator import CoordinatorConfig, GroupCoordinatorShard, RequestContext, Result
from kgroups.coordinator.consumer import ConsumerGroupConfig, TopicImage
from kgroups.coordinator.result import Record
from kgroups.runtime.coordinator_driver import CoordinatorDriver

START_MS = 1_700_000_000_000
SESSION_MS = 10_000
REBALANCE_MS = 30_000
COMMIT_TIMEOUT_MS = 5_000  # offsets.commit.timeout.ms


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def subscription(*topics: str, version: int = 0) -> bytes:
    """Consumer protocol subscription bytes, as a Java consumer sends them."""
    out = bytearray(struct.pack(">hi", version, len(topics)))
    for topic in topics:
        encoded = topic.encode()
        out += struct.pack(">h", len(encoded)) + encoded
    out += struct.pack(">i", -1)  # no user data
    if version >= 1:
        out += struct.pack(">i", 0)  # owned partitions
    return bytes(out)


@dataclass(frozen=True)
class Token:
    """A reply_to token; the name says which request it stands for."""

    n: int
    name: str = field(compare=False)

    def __repr__(self) -> str:
        return f"<{self.name}#{self.n}>"


class Harness:
    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        *,
        partitions: dict[str, int] | None = None,
        now: int = START_MS,
        consumer_config: ConsumerGroupConfig | None = None,
    ) -> None:
        self.config = config or CoordinatorConfig()
        self.consumer_config = consumer_config or ConsumerGroupConfig()
        self.now = now
        self.topics = {"t": 4, "u": 2} if partitions is None else partitions
        # What consumer groups see of the topics (ids, partition counts).
        self.topic_image = TopicImage()
        for name, count in self.topics.items():
            self.topic_image.put(name, count)
        self._ids = itertools.count(1)
        self._member_counter = itertools.count(1)
        self.shard = self.new_shard()
        self.log: list[Record] = []
        self.replies: dict[Token, Any] = {}
        self.reply_count: dict[Token, int] = {}
        self.fail_next_append: ErrorCode | None = None
        # Every result the driver handled: requests', timers', failed appends'.
        self.results: list[Result] = []
        self.driver = CoordinatorDriver(self.shard, COMMIT_TIMEOUT_MS, self.results.append)
        # While a list: results are kept here as if their appends had not
        # completed (no records logged, no replies sent).
        self.held: list[Result] | None = None

    def new_shard(self) -> GroupCoordinatorShard:
        image = self.topic_image
        return GroupCoordinatorShard(
            0,
            self.config,
            partition_exists=self.partition_exists,
            new_member_id=lambda prefix: f"{prefix}-{next(self._member_counter)}",
            consumer_config=self.consumer_config,
            topics=image,
            topic_name=lambda topic_id: next(
                (n for n, info in image.topics.items() if info.topic_id == topic_id), None
            ),
        )

    def restart(self) -> None:
        """A new shard loads the log written so far, as after a broker restart."""
        self.shard = self.new_shard()
        self.driver = CoordinatorDriver(self.shard, COMMIT_TIMEOUT_MS, self.results.append)
        self.shard.begin_load()
        for key, value in self.log:
            self.shard.replay(key, value)
        self.handle(self.shard.finish_load(self.now))

    def topic_id(self, name: str) -> Any:
        return self.topic_image.topics[name].topic_id

    def partition_exists(self, topic: str, partition: int) -> bool:
        return 0 <= partition < self.topics.get(topic, 0)

    # -- the shell's side ---------------------------------------------------

    def token(self, name: str) -> Token:
        return Token(next(self._ids), name)

    def ctx(self, token: Token, version: int, client_id: str = "client") -> RequestContext:
        return RequestContext(
            api_version=version, client_id=client_id, client_host="/10.0.0.1", reply_to=token
        )

    def handle(self, result: Result) -> Result:
        if self.held is not None:
            self.held.append(result)
            return result
        self.driver.submit(result, self.now)
        self._drive()
        return result

    def _drive(self) -> None:
        """Do what the driver asks: append (or fail to), send replies."""
        appends = self.driver.appends
        while appends:
            append = appends.popleft()
            if self.fail_next_append is not None:
                error, self.fail_next_append = self.fail_next_append, None
                self.driver.failed(append, error, self.now)
                continue
            self.log.extend(append.records)
            self.driver.durable(append, self.now)
        for token, response in self.driver.take_replies():
            assert isinstance(token, Token)
            self.replies[token] = response
            self.reply_count[token] = self.reply_count.get(token, 0) + 1

    def advance(self, delta_ms: int) -> Result:
        """Move the clock, firing timers at their own deadlines on the way."""
        target = self.now + delta_ms
        last = Result()
        while True:
            deadline = self.driver.next_deadline_ms()
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            handled = len(self.results)
            self.driver.on_clock(self.now)
            self._drive()
            if len(self.results) > handled:
                last = self.results[handled]
        self.now = target
        return last

    def reply(self, token: Token) -> Any:
        return self.replies.get(token)

    # -- requests -----------------------------------------------------------

    def join(
        self,
        group: str,
        member_id: str = "",
        *,
        instance: str | None = None,
        protocols: tuple[tuple[str, bytes], ...] = (("range", b"meta"),),
        protocol_type: str = "consumer",
        session: int = SESSION_MS,
        rebalance: int = REBALANCE_MS,
        version: int = 9,
        client_id: str = "client",
    ) -> Token:
        token = self.token(f"join {member_id or instance or 'new'}")
        req = JoinGroupRequest(
            group_id=group,  # type: ignore[arg-type]
            session_timeout=ms(session),
            rebalance_timeout=ms(rebalance),
            member_id=member_id,
            group_instance_id=instance,
            protocol_type=protocol_type,
            protocols=tuple(
                JoinGroupRequestProtocol(name=name, metadata=meta) for name, meta in protocols
            ),
        )
        self.handle(self.shard.join_group(req, self.ctx(token, version, client_id), self.now))
        return token

    def join_new(self, group: str, **kwargs: Any) -> tuple[str, Token]:
        """The two-step join of a dynamic member: (its member id, the parked JoinGroup)."""
        first = self.join(group, **kwargs)
        response = self.reply(first)
        assert response.error_code is ErrorCode.member_id_required, response
        return response.member_id, self.join(group, response.member_id, **kwargs)

    def sync(
        self,
        group: str,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        instance: str | None = None,
        protocol_type: str | None = "consumer",
        protocol_name: str | None = "range",
        version: int = 5,
    ) -> Token:
        token = self.token(f"sync {member_id}")
        req = SyncGroupRequest(
            group_id=group,  # type: ignore[arg-type]
            generation_id=i32(generation),
            member_id=member_id,
            group_instance_id=instance,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=tuple(
                SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in (assignments or {}).items()
            ),
        )
        self.handle(self.shard.sync_group(req, self.ctx(token, version), self.now))
        return token

    def heartbeat(
        self, group: str, member_id: str, generation: int, *, instance: str | None = None
    ) -> ErrorCode:
        token = self.token(f"heartbeat {member_id}")
        req = HeartbeatRequest(
            group_id=group,  # type: ignore[arg-type]
            generation_id=i32(generation),
            member_id=member_id,
            group_instance_id=instance,
        )
        self.handle(self.shard.heartbeat(req, self.ctx(token, 4), self.now))
        error: ErrorCode = self.reply(token).error_code
        return error

    def leave(
        self, group: str, *members: tuple[str, str | None], version: int = 5
    ) -> LeaveGroupResponse:
        token = self.token("leave")
        req = LeaveGroupRequest(
            group_id=group,  # type: ignore[arg-type]
            members=tuple(MemberIdentity(member_id=m, group_instance_id=i) for m, i in members),
        )
        self.handle(self.shard.leave_group(req, self.ctx(token, version), self.now))
        response: LeaveGroupResponse = self.reply(token)
        return response

    def commit(
        self,
        group: str,
        offsets: dict[tuple[str, int], int],
        *,
        member_id: str = "",
        generation: int = -1,
        instance: str | None = None,
        metadata: str | None = "",
        leader_epoch: int = -1,
        version: int = 9,
        retention_ms: int = -1,
    ) -> dict[tuple[str, int], ErrorCode]:
        token = self.token("commit")
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(
                OffsetCommitRequestPartition(
                    partition_index=i32(partition),
                    committed_offset=i64(offset),
                    committed_leader_epoch=i32(leader_epoch),
                    committed_metadata=metadata,
                )
            )
        req = OffsetCommitRequest(
            group_id=group,  # type: ignore[arg-type]
            generation_id_or_member_epoch=i32(generation),
            member_id=member_id,
            group_instance_id=instance,
            topics=tuple(
                OffsetCommitRequestTopic(name=t, partitions=tuple(ps))  # type: ignore[arg-type]
                for t, ps in by_topic.items()
            ),
        )
        self.handle(self.shard.offset_commit(req, self.ctx(token, version), self.now, retention_ms))
        return commit_errors(self.reply(token))

    def fetch(
        self, group: str, partitions: dict[str, list[int]] | None = None
    ) -> dict[tuple[str, int], tuple[int, int, str | None]]:
        """{(topic, partition): (offset, leader epoch, metadata)}."""
        token = self.token("fetch")
        req = OffsetFetchRequestGroup(
            group_id=group,  # type: ignore[arg-type]
            topics=None
            if partitions is None
            else tuple(
                OffsetFetchRequestTopics(
                    name=t,  # type: ignore[arg-type]
                    partition_indexes=tuple(i32(p) for p in ps),
                )
                for t, ps in partitions.items()
            ),
        )
        self.handle(self.shard.offset_fetch(req, self.ctx(token, 9), self.now))
        response: OffsetFetchResponse = self.reply(token)
        (entry,) = response.groups
        assert entry.error_code is ErrorCode.none
        return {
            (t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata)
            for t in entry.topics
            for p in t.partitions
        }

    def delete_offsets(self, group: str, partitions: dict[str, list[int]]) -> OffsetDeleteResponse:
        token = self.token("offset delete")
        req = OffsetDeleteRequest(
            group_id=group,  # type: ignore[arg-type]
            topics=tuple(
                OffsetDeleteRequestTopic(
                    name=t,  # type: ignore[arg-type]
                    partitions=tuple(
                        OffsetDeleteRequestPartition(partition_index=i32(p)) for p in ps
                    ),
                )
                for t, ps in partitions.items()
            ),
        )
        self.handle(self.shard.offset_delete(req, self.ctx(token, 0), self.now))
        response: OffsetDeleteResponse = self.reply(token)
        return response

    def delete_groups(self, *groups: str) -> dict[str, ErrorCode]:
        token = self.token("delete groups")
        req = DeleteGroupsRequest(groups_names=groups)  # type: ignore[arg-type]
        self.handle(self.shard.delete_groups(req, self.ctx(token, 2), self.now))
        return {r.group_id: r.error_code for r in self.reply(token).results}

    def consumer_heartbeat(
        self,
        group: str,
        member_id: str,
        epoch: int,
        *,
        topics: tuple[str, ...] | None = None,
        owned: dict[str, list[int]] | None = None,
        rebalance_timeout_ms: int = -1,
        instance_id: str | None = None,
        regex: str | None = None,
    ) -> ConsumerGroupHeartbeatResponse:
        """One ConsumerGroupHeartbeat; a join (epoch 0) fills in what a join
        must carry unless given."""
        if epoch == 0:
            topics = topics if topics is not None else ("t",) if regex is None else ()
            owned = owned if owned is not None else {}
            rebalance_timeout_ms = (
                REBALANCE_MS if rebalance_timeout_ms == -1 else rebalance_timeout_ms
            )
        token = self.token("consumer-heartbeat")
        req = ConsumerGroupHeartbeatRequest(
            group_id=group,  # type: ignore[arg-type]
            member_id=member_id,
            member_epoch=i32(epoch),
            instance_id=instance_id,
            rebalance_timeout=ms(rebalance_timeout_ms),
            subscribed_topic_names=topics,  # type: ignore[arg-type]
            subscribed_topic_regex=regex,
            topic_partitions=None
            if owned is None
            else tuple(
                TopicPartitions(
                    topic_id=self.topic_id(name), partitions=tuple(i32(p) for p in partitions)
                )
                for name, partitions in owned.items()
            ),
        )
        self.handle(self.shard.consumer_group_heartbeat(req, self.ctx(token, 1), self.now))
        response: ConsumerGroupHeartbeatResponse = self.reply(token)
        return response

    def owned(self, response: ConsumerGroupHeartbeatResponse) -> dict[str, list[int]]:
        """The partitions a heartbeat's answer assigns, by topic name."""
        assert response.assignment is not None
        names = {info.topic_id: n for n, info in self.topic_image.topics.items()}
        return {
            names[tp.topic_id]: sorted(tp.partitions) for tp in response.assignment.topic_partitions
        }

    def consumer_describe(self, group: str) -> ConsumerDescribed:
        token = self.token("consumer-describe")
        req = ConsumerGroupDescribeRequest(
            group_ids=(group,),  # type: ignore[arg-type]
            include_authorized_operations=False,
        )
        self.handle(self.shard.consumer_group_describe(req, self.ctx(token, 1), self.now))
        (described,) = self.reply(token).groups
        return described  # type: ignore[no-any-return]

    def describe(self, group: str) -> DescribedGroup:
        token = self.token("describe")
        req = DescribeGroupsRequest(
            groups=(group,),  # type: ignore[arg-type]
            include_authorized_operations=False,
        )
        self.handle(self.shard.describe_groups(req, self.ctx(token, 5), self.now))
        (described,) = self.reply(token).groups
        return described  # type: ignore[no-any-return]

    def list_groups(
        self, states: tuple[str, ...] = (), types: tuple[str, ...] = ()
    ) -> ListGroupsResponse:
        token = self.token("list")
        req = ListGroupsRequest(states_filter=states, types_filter=types)
        self.handle(self.shard.list_groups(req, self.ctx(token, 5), self.now))
        response: ListGroupsResponse = self.reply(token)
        return response

    # -- whole conversations -----------------------------------------------

    def form_group(
        self, group: str, size: int, *, protocols: tuple[tuple[str, bytes], ...] | None = None
    ) -> tuple[list[str], int]:
        """Members join a new group and sync; returns (member ids, generation)."""
        kwargs: dict[str, Any] = {} if protocols is None else {"protocols": protocols}
        joined = [self.join_new(group, **kwargs) for _ in range(size)]
        for _ in range(100):  # the initial delay extends while members keep arriving
            if all(self.reply(token) is not None for _, token in joined):
                break
            self.advance(self.config.initial_rebalance_delay_ms)
        responses: list[JoinGroupResponse] = [self.reply(token) for _, token in joined]
        assert all(r is not None and r.error_code is ErrorCode.none for r in responses), responses
        generation = responses[0].generation_id
        leader = responses[0].leader
        members = [member_id for member_id, _ in joined]
        name = responses[0].protocol_name
        assignments = {m: f"assignment-{m}".encode() for m in members}
        self.sync(group, leader, generation, assignments, protocol_name=name)
        for member_id in members:
            if member_id != leader:
                self.sync(group, member_id, generation, protocol_name=name)
        return members, generation

    def sync_response(self, token: Token) -> SyncGroupResponse:
        response: SyncGroupResponse = self.reply(token)
        return response


def commit_errors(response: OffsetCommitResponse) -> dict[tuple[str, int], ErrorCode]:
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }
