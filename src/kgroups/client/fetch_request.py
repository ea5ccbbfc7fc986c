"""The consumer's Fetch request, as its configuration shapes it.

Shared by the consumer's Fetcher and the Spark range reader: every partition
is fetched from an offset, with the configured byte limits, wait, isolation
level and rack, and no fetch session (KIP-227). ``fetch_request`` builds such
a request from explicit limits, for readers without a consumer configuration
(``kgroups consume``, the lag exporter).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from kio.schema.fetch.v12 import FetchRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.consumer_record import TopicPartition

__all__ = ["FetchRequests", "fetch_request"]


class FetchRequests:
    def __init__(self, config: ConsumerConfig) -> None:
        self.config = config
        self.read_committed = config.isolation_level == "read_committed"
        self.timeout = (config.request_timeout_ms + config.fetch_max_wait_ms) / 1000
        """Seconds to wait for an answer: the broker may hold it fetch.max.wait.ms."""
        self._max_wait = i32Timedelta.parse(
            datetime.timedelta(milliseconds=config.fetch_max_wait_ms)
        )

    def request(self, offsets: Mapping[TopicPartition, int]) -> FetchRequest:
        """Fetch each partition from its offset."""
        config = self.config
        return fetch_request(
            offsets,
            max_wait=self._max_wait,
            min_bytes=config.fetch_min_bytes,
            max_bytes=config.fetch_max_bytes,
            partition_max_bytes=config.max_partition_fetch_bytes,
            read_committed=self.read_committed,
            rack=config.client_rack or "",
        )


def fetch_request(
    offsets: Mapping[TopicPartition, int],
    *,
    max_wait: i32Timedelta,
    min_bytes: int,
    max_bytes: int,
    partition_max_bytes: int,
    read_committed: bool = False,
    rack: str = "",
) -> FetchRequest:
    """Fetch each partition from its offset, outside any fetch session."""
    by_topic: dict[str, list[FetchPartition]] = {}
    for tp, offset in offsets.items():
        by_topic.setdefault(tp.topic, []).append(
            FetchPartition(
                partition=i32(tp.partition),
                current_leader_epoch=i32(-1),
                fetch_offset=i64(offset),
                last_fetched_epoch=i32(-1),
                log_start_offset=i64(-1),
                partition_max_bytes=i32(partition_max_bytes),
            )
        )
    return FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=max_wait,
        min_bytes=i32(min_bytes),
        max_bytes=i32(max_bytes),
        isolation_level=i8(1 if read_committed else 0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=tuple(
            FetchTopic(topic=TopicName(t), partitions=tuple(ps)) for t, ps in by_topic.items()
        ),
        forgotten_topics_data=(),
        rack_id=rack,
    )
