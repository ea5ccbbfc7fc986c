"""DescribeLogDirs: each log directory of this broker, with the size of the
partitions it holds that were asked for (null topics: all of them).

The offset lag is 0 and no log is a future one: a partition has one copy
here, never moved between directories. v4 adds the volume's total and usable
bytes; the store, a cluster's one directory, answers -1 for them.
"""

from __future__ import annotations

from itertools import groupby
from typing import TYPE_CHECKING

from kio.schema.describe_log_dirs.v4 import DescribeLogDirsRequest, DescribeLogDirsResponse
from kio.schema.describe_log_dirs.v4.response import (
    DescribeLogDirsPartition,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)

from kgroups.errors import ErrorCode
from kgroups.handlers.common import NO_THROTTLE
from kgroups.partitions.log_dirs import LogDir
from kgroups.protocol.types import TopicName, i32, i64

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: DescribeLogDirsRequest
) -> DescribeLogDirsResponse:
    asked = None
    if request.topics is not None:
        asked = {(str(t.topic), int(p)) for t in request.topics for p in t.partitions}
    dirs = await broker.partitions.describe_log_dirs(asked)
    return DescribeLogDirsResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        results=tuple(_result(d) for d in dirs),
    )


def _result(log_dir: LogDir) -> DescribeLogDirsResult:
    by_topic = groupby(sorted(log_dir.sizes.items()), key=lambda item: item[0][0])
    return DescribeLogDirsResult(
        error_code=log_dir.error,
        log_dir=log_dir.path,
        topics=tuple(
            DescribeLogDirsTopic(
                name=TopicName(topic),
                partitions=tuple(
                    DescribeLogDirsPartition(
                        partition_index=i32(partition),
                        partition_size=i64(size),
                        offset_lag=i64(0),
                        is_future_key=False,
                    )
                    for (_, partition), size in entries
                ),
            )
            for topic, entries in by_topic
        ),
        total_bytes=i64(log_dir.total_bytes),
        usable_bytes=i64(log_dir.usable_bytes),
    )
