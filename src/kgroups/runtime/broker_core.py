"""What the broker offers below the request layer: its partitions (through
the partition seam), topics, clock and configuration.

The coordinator runtime and the background tasks the broker starts depend on
this protocol, not on server/broker.py, which imports them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kgroups.clock import Clock
from kgroups.config.broker_config import BrokerConfig
from kgroups.config.dynamic_configs import DynamicConfigs
from kgroups.metrics.broker_stats import BrokerStats
from kgroups.partitions.append_waiters import AppendWaiters
from kgroups.partitions.config import LogConfig
from kgroups.partitions.home import PartitionHome
from kgroups.partitions.topic_registry import TopicRegistry
from kgroups.quotas.client_quotas import ClientQuotas
from kgroups.runtime.faults import Faults
from kgroups.runtime.producer_ids import ProducerIdManager
from kgroups.share_partitions.manager import SharePartitionManager
from kgroups.topics.names import Topic

if TYPE_CHECKING:
    from kgroups.cluster.member import ClusterMember
    from kgroups.security.settings import SaslSettings


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
    log_dir: Path
    default_log_config: LogConfig
    """The broker's log.* settings, which a topic's configs override."""
    topics: TopicRegistry
    dynamic_configs: DynamicConfigs
    """Groups' and brokers' configs changed at run time (IncrementalAlterConfigs)."""
    effective_config: BrokerConfig
    quotas: ClientQuotas
    """Client quotas set (AlterClientQuotas) and the rates they bound."""
    """``config`` with the dynamic broker configs over it."""
    partitions: PartitionHome
    """Where the partitions live: ``log`` to reach one, ``appended`` after each append."""
    producer_ids: ProducerIdManager
    append_waiters: AppendWaiters
    share_partitions: SharePartitionManager
    """Share groups' in-flight records and share sessions (KIP-932)."""
    cluster: ClusterMember | None
    """Set in cluster mode (``cluster.store.url``): the lease, leaders, live brokers."""
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

    def on_topic_gone(self, name: str) -> None:
        """The topic was deleted (here, or by another broker of the cluster)."""
        ...
