"""What the cluster store refuses, as Kafka errors the broker can put on the wire."""

from __future__ import annotations

from kgroups.errors import ErrorCode, KafkaError


class NotLeader(KafkaError):
    """The writer does not hold the partition (any more): another broker leads it,
    or a newer leader epoch was elected. Produce answers NOT_LEADER_OR_FOLLOWER;
    a request that carried the stale epoch answers FENCED_LEADER_EPOCH."""

    def __init__(
        self, topic: str, partition: int, leader_id: int | None, leader_epoch: int
    ) -> None:
        super().__init__(
            ErrorCode.not_leader_or_follower,
            f"{topic}-{partition} is led by broker {leader_id} at leader epoch {leader_epoch}",
        )
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch


class LeaseExpired(KafkaError):
    """The broker's own lease is gone (expired, or the broker.id registered anew):
    it leads nothing until it registers again."""

    def __init__(self, broker_id: int, lease_epoch: int) -> None:
        super().__init__(
            ErrorCode.not_leader_or_follower,
            f"broker {broker_id} lost its lease (epoch {lease_epoch})",
        )
        self.broker_id = broker_id


class DuplicateBroker(KafkaError):
    """Another broker with this broker.id holds a live lease (Kafka refuses the
    second registration the same way until the first one's session times out)."""

    def __init__(self, broker_id: int) -> None:
        super().__init__(
            ErrorCode.duplicate_broker_registration,
            f"broker {broker_id} is already registered with a live lease",
        )


class UnknownPartition(KafkaError):
    def __init__(self, topic: str, partition: int) -> None:
        super().__init__(ErrorCode.unknown_topic_or_partition, f"{topic}-{partition}")


class StoreUnavailable(KafkaError):
    """The store could not be reached or did not answer. A write in flight may or
    may not have committed; it is answered with this retriable error, never
    acknowledged."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.kafka_storage_error, f"cluster store unavailable: {message}")
