"""What one turn of a cluster member reads from the store, in one go."""

from __future__ import annotations

from dataclasses import dataclass

from kgroups.cluster.broker_leases import LiveBroker
from kgroups.cluster.leadership import PartitionLeader
from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.postgres_store.security import Security
from kgroups.topics.names import Topic

__all__ = ["ClusterView"]

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ClusterView:
    leaders: list[PartitionLeader]
    live: list[LiveBroker]
    topics: list[Topic]
    # partition -> (log start, log end) of the partitions this incarnation leads
    # and has no StoreLog for yet, once no transaction writes them (see gained).
    ends: dict[TopicPartition, tuple[int, int]]
    # The idempotent producers of those partitions.
    producers: dict[TopicPartition, ProducerStateManager]
    # The ACLs and SCRAM credentials, when they changed since the last read.
    security: Security | None
    # The dynamic configs of groups and brokers, by (resource type, name).
    configs: dict[tuple[int, str], dict[str, str]]
