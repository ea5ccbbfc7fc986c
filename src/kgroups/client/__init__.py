"""kgroups' own Kafka client: consumer (with group membership) and producer.

``Consumer`` and ``Producer`` block; ``AsyncConsumer`` and ``AsyncProducer`` are
their asyncio cores. All take the Java client's configuration keys.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Imported on first use: the broker imports kgroups.client.connection (to reach
# its peers) and should not pay for the consumer and producer too.
_WHERE = {
    "AbortableTransactionError": "kgroups.client.exceptions",
    "AsyncConsumer": "kgroups.client.async_consumer",
    "AsyncProducer": "kgroups.client.async_producer",
    "CommitFailedError": "kgroups.client.exceptions",
    "ConfigError": "kgroups.client.config_schema",
    "Consumer": "kgroups.client.consumer",
    "ConsumerGroupMetadata": "kgroups.client.group_metadata",
    "ConsumerRecord": "kgroups.client.consumer_record",
    "DeliveryFuture": "kgroups.client.delivery",
    "FatalTransactionError": "kgroups.client.exceptions",
    "FencedInstanceIdError": "kgroups.client.exceptions",
    "InvalidTopicError": "kgroups.client.exceptions",
    "NoOffsetForPartitionError": "kgroups.client.exceptions",
    "OffsetAndMetadata": "kgroups.client.consumer_record",
    "Producer": "kgroups.client.producer",
    "RebalanceInProgressError": "kgroups.client.exceptions",
    "RebalanceListener": "kgroups.client.rebalance_listener",
    "RecordMetadata": "kgroups.client.record_metadata",
    "StaleMemberEpochError": "kgroups.client.exceptions",
    "TopicPartition": "kgroups.client.consumer_record",
    "TransactionStateError": "kgroups.client.exceptions",
}

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kgroups.client' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
