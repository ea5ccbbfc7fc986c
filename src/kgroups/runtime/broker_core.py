"""What the broker offers below the request layer: its logs, topics, clock
and configuration.

The coordinator runtime and the background tasks the broker starts depend on
this protocol, not on server/broker.py, which imports them.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from kgroups.clock import Clock
from kgroups.config.broker_config import BrokerConfig
from kgroups.metrics.broker_stats import BrokerStats
from kgroups.partitions.append_waiters import AppendWaiters
from kgroups.partitions.config import LogConfig
from kgroups.partitions.topic_registry import Topic, TopicRegistry
from kgroups.runtime.faults import Faults
from kgroups.runtime.producer_ids import ProducerIdManager
from kgroups.storage.log import SegmentLog
from kgroups.storage.log_manager import LogManager

if TYPE_CHECKING:
    from kgroups.cluster.member import ClusterMember
    from kgroups.postgres_store.store_log import StoreLog
    from kgroups.security.settings import SaslSettings

    # A partition's log as requests see it: local, or led here in cluster mode.
    ServedLog = SegmentLog | StoreLog


class BrokerCore(Protocol):
    config: BrokerConfig
    clock: Clock
    broker_id: int
    advertised: tuple[str, int]
    """The host and port registered in a cluster (the inter-broker listener's)."""
    advertised_listeners: dict[str, tuple[str, int]]
    """Per listener name, the host and port its clients are told to connect to."""
    closing: bool
    sasl: SaslSettings
    """Enabled SASL mechanisms and the SCRAM credentials store."""
    topics: TopicRegistry
    logs: LogManager
    producer_ids: ProducerIdManager
    append_waiters: AppendWaiters
    cluster: ClusterMember | None
    """Set in cluster mode (``cluster.store.url``): leases, leaders, store logs."""
    stats: BrokerStats
    """Request-path counters for the metrics endpoint."""
    faults: Faults
    """Faults a test set (kgroups.testing); none in production."""

    def topic_config(self, topic: Topic) -> LogConfig: ...

    def plan_topic(
        self, name: str, partitions: int | None, configs: dict[str, str]
    ) -> tuple[Topic, LogConfig]:
        """Check a new topic (name, partition count, configs) without creating it."""
        ...

    def create_topic(self, name: str, partitions: int | None, configs: dict[str, str]) -> Topic:
        """Create a topic on the loop."""
        ...

    def deletable_topic(self, name: str) -> Topic:
        """The topic, if a request may delete it (else a KafkaError)."""
        ...

    def log(self, topic: str, partition: int) -> ServedLog:
        """A hosted, online partition's log (else a KafkaError); in cluster
        mode, a partition this broker leads (else NOT_LEADER_OR_FOLLOWER)."""
        ...

    def appended(self, topic: str, partition: int, plog: ServedLog) -> asyncio.Future[None] | None:
        """Called after every append; a future when an fsync (in cluster mode, a
        commit to the store) is due and started."""
        ...

    def on_topic_gone(self, name: str) -> None:
        """Cluster mode: another broker deleted the topic."""
        ...
