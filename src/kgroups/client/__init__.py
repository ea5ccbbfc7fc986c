"""kgroups' own Kafka client: consumer (with group membership) and producer.

``Consumer`` and ``Producer`` block; ``AsyncConsumer`` and ``AsyncProducer`` are
their asyncio cores. All take the Java client's configuration keys.
"""

from kgroups.client.async_consumer import AsyncConsumer
from kgroups.client.async_producer import AsyncProducer
from kgroups.client.config_schema import ConfigError
from kgroups.client.consumer import Consumer
from kgroups.client.consumer_record import ConsumerRecord, OffsetAndMetadata, TopicPartition
from kgroups.client.delivery import DeliveryFuture
from kgroups.client.exceptions import (
    AbortableTransactionError,
    CommitFailedError,
    FatalTransactionError,
    FencedInstanceIdError,
    InvalidTopicError,
    NoOffsetForPartitionError,
    RebalanceInProgressError,
    StaleMemberEpochError,
    TransactionStateError,
)
from kgroups.client.group_metadata import ConsumerGroupMetadata
from kgroups.client.producer import Producer
from kgroups.client.rebalance_listener import RebalanceListener
from kgroups.client.record_metadata import RecordMetadata

__all__ = [
    "AbortableTransactionError",
    "AsyncConsumer",
    "AsyncProducer",
    "CommitFailedError",
    "ConfigError",
    "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerRecord",
    "DeliveryFuture",
    "FatalTransactionError",
    "FencedInstanceIdError",
    "InvalidTopicError",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "Producer",
    "RebalanceInProgressError",
    "RebalanceListener",
    "RecordMetadata",
    "StaleMemberEpochError",
    "TopicPartition",
    "TransactionStateError",
]
