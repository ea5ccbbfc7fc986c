"""An fsync of `__consumer_offsets` that fails after the write: the commits
in flight on that group are rolled back and answered with the error, what
other groups committed meanwhile stands."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kio.schema.offset_commit.v9.request import OffsetCommitRequest

from kgroups.client.admin import Admin
from kgroups.config.broker_config import BrokerConfig
from kgroups.coordinator.records import encode_offset_commit_key
from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.types import i32
from kgroups.records.batch import iter_batches, iter_key_values
from kgroups.runtime.context import RequestContext
from kgroups.server.broker import Broker

from group_requests import commit_request

_COMMIT = RequestContext(
    api_key=apis.OFFSET_COMMIT, api_version=9, correlation_id=1, client_id="c", client_host="/h"
)


@contextlib.asynccontextmanager
async def _one_partition_broker(data: Path) -> AsyncIterator[tuple[Broker, Admin]]:
    """A broker whose groups all share one `__consumer_offsets` partition,
    its shard and its log; an admin client on it."""
    broker = Broker(
        BrokerConfig(
            {
                "listeners": "PLAINTEXT://127.0.0.1:0",
                "log.dirs": str(data),
                "offsets.topic.num.partitions": "1",
            }
        )
    )
    await broker.start()
    admin = Admin(f"127.0.0.1:{broker.port}")
    try:
        yield broker, admin
    finally:
        await admin.close()
        await broker.stop()


def _commit(broker: Broker, request: OffsetCommitRequest) -> asyncio.Future[Any]:
    return asyncio.ensure_future(
        broker.coordinator.call(
            request.group_id, _COMMIT, lambda s, c, now: s.offset_commit(request, c, now)
        )
    )


def _hold_fsyncs(broker: Broker) -> tuple[list[asyncio.Future[None]], Any]:
    """From now on every append waits for an fsync the test completes by hand;
    the futures, and the broker's own ``appended`` to put back."""
    fsyncs: list[asyncio.Future[None]] = []

    def pending_fsync(topic: str, partition: int, plog: Any) -> asyncio.Future[None]:
        fsyncs.append(asyncio.get_running_loop().create_future())
        return fsyncs[-1]

    appended, broker.partitions.appended = broker.partitions.appended, pending_fsync  # type: ignore[method-assign]
    return fsyncs, appended


def _error(task: asyncio.Future[Any]) -> ErrorCode:
    code: ErrorCode = task.result().topics[0].partitions[0].error_code
    return code


def test_a_late_fsync_failure_rolls_back_the_commits_built_on_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with _one_partition_broker(tmp_path / "data") as (broker, admin):
            broker.create_topic("t", 1, {})
            done = _commit(broker, commit_request("g", 5))
            await done
            assert _error(done) == ErrorCode.none
            fsyncs, appended = _hold_fsyncs(broker)
            # One loop turn apart, so that each commit gets its own write and fsync.
            first = _commit(broker, commit_request("g", 6))
            await asyncio.sleep(0.01)
            other = _commit(broker, commit_request("h", 1))
            await asyncio.sleep(0.01)
            second = _commit(broker, commit_request("g", 7))
            await asyncio.sleep(0.05)
            assert len(fsyncs) == 3 and not any(t.done() for t in (first, other, second))
            fsyncs[0].set_exception(OSError("fsync failed"))  # g's first batch is lost
            await asyncio.wait({first, second}, timeout=10)
            assert _error(first) == ErrorCode.not_coordinator
            # The second commit of g was applied on top of the lost one: it is
            # answered with the error too, without waiting for its own fsync.
            assert _error(second) == ErrorCode.not_coordinator
            assert not other.done()  # h's commit did not build on it: it waits for its own
            fsyncs[1].set_result(None)
            await asyncio.wait({other}, timeout=10)
            assert _error(other) == ErrorCode.none
            fsyncs[2].set_exception(OSError("fsync failed"))  # g's second fsync fails later
            await asyncio.sleep(0.05)
            broker.partitions.appended = appended  # type: ignore[method-assign]
            assert await admin.committed("g") == {("t", 0): 5}
            assert await admin.committed("h") == {("t", 0): 1}

    asyncio.run(scenario())


def test_commits_of_one_loop_turn_share_a_write_and_an_fsync_and_its_failure(
    tmp_path: Path,
) -> None:
    """Commits that arrive together are appended as one log batch with one
    fsync; if that fsync fails, every one of them is answered with the error
    and none is kept, whatever group it belongs to."""

    async def scenario() -> None:
        async with _one_partition_broker(tmp_path / "data") as (broker, admin):
            broker.create_topic("t", 1, {})
            await asyncio.gather(
                _commit(broker, commit_request("g", 5)), _commit(broker, commit_request("h", 5))
            )
            plog = broker.partitions.log("__consumer_offsets", 0)
            end_before = plog.log_end_offset
            fsyncs, appended = _hold_fsyncs(broker)
            together = [_commit(broker, commit_request(group, 6)) for group in ("g", "h", "i")]
            await asyncio.sleep(0.05)
            assert len(fsyncs) == 1  # one fsync for the three
            assert plog.log_end_offset == end_before + 3
            assert len(list(iter_batches(plog.read(end_before, 1 << 20)))) == 1
            fsyncs[0].set_exception(OSError("fsync failed"))
            await asyncio.wait(together, timeout=10)
            assert all(_error(task) == ErrorCode.not_coordinator for task in together)
            broker.partitions.appended = appended  # type: ignore[method-assign]
            assert await admin.committed("g") == {("t", 0): 5}
            assert await admin.committed("h") == {("t", 0): 5}
            assert await admin.committed("i") == {}

    asyncio.run(scenario())


def _big_commit(group: str, partitions: int, metadata: str) -> OffsetCommitRequest:
    """A commit of offset 7 to partitions 0..partitions-1 of t, each with ``metadata``."""
    base = commit_request(group, 7)
    topic = base.topics[0]
    partition = topic.partitions[0]
    return dataclasses.replace(
        base,
        topics=(
            dataclasses.replace(
                topic,
                partitions=tuple(
                    dataclasses.replace(
                        partition, partition_index=i32(p), committed_metadata=metadata
                    )
                    for p in range(partitions)
                ),
            ),
        ),
    )


def test_commits_of_one_turn_past_half_a_mebibyte_take_several_batches_in_order(
    tmp_path: Path,
) -> None:
    """Eight commits of 160 KB arriving together do not make one 1.3 MB log
    batch: they are cut into batches of at most 512 KiB, in commit order, and
    every one of them is stored."""

    async def scenario() -> None:
        async with _one_partition_broker(tmp_path / "data") as (broker, admin):
            broker.create_topic("t", 40, {})
            metadata = "m" * 4000
            await _commit(broker, _big_commit("warm-up", 40, metadata))
            plog = broker.partitions.log("__consumer_offsets", 0)
            start = plog.log_end_offset
            groups = [f"g{i}" for i in range(8)]
            await asyncio.gather(*(_commit(broker, _big_commit(g, 40, metadata)) for g in groups))
            written = plog.read(start, 1 << 24)
            batches = list(iter_batches(written))
            assert len(batches) == 4
            assert all(header.size <= 512 * 1024 + 1024 for _pos, header in batches)
            keys = [
                key
                for pos, header in batches
                for key, _value in iter_key_values(written[pos : pos + header.size])
            ]
            assert keys[::40] == [encode_offset_commit_key(g, "t", 0) for g in groups]
            for group in groups:
                committed = await admin.committed(group)
                assert committed == {("t", p): 7 for p in range(40)}

    asyncio.run(scenario())
