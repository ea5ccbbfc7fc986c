"""kgroups' own Kafka client: consumer (with group membership), share consumer
(KIP-932 share groups) and producer.

``Consumer``, ``ShareConsumer`` and ``Producer`` block; ``AsyncConsumer``,
``AsyncShareConsumer`` and ``AsyncProducer`` are their asyncio cores. All take
the Java client's configuration keys.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kgroups.client.async_consumer import AsyncConsumer
    from kgroups.client.async_producer import AsyncProducer
    from kgroups.client.async_share_consumer import AsyncShareConsumer
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
    from kgroups.client.share_consumer import ShareConsumer
    from kgroups.client.share_record import AcknowledgeType, ShareConsumerRecord

# Imported on first use: the broker imports kgroups.client.connection (to reach
# its peers) and should not pay for the consumer and producer too.
_WHERE = {
    "AbortableTransactionError": "kgroups.client.exceptions",
    "AcknowledgeType": "kgroups.client.share_record",
    "AsyncShareConsumer": "kgroups.client.async_share_consumer",
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
    "ShareConsumer": "kgroups.client.share_consumer",
    "ShareConsumerRecord": "kgroups.client.share_record",
    "StaleMemberEpochError": "kgroups.client.exceptions",
    "TopicPartition": "kgroups.client.consumer_record",
    "TransactionStateError": "kgroups.client.exceptions",
}

__all__ = [
    "AbortableTransactionError",
    "AcknowledgeType",
    "AsyncConsumer",
    "AsyncProducer",
    "AsyncShareConsumer",
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
    "ShareConsumer",
    "ShareConsumerRecord",
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
