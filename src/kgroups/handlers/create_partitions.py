"""CreatePartitions: more partitions for existing topics, with Kafka's checks,
messages and error codes (ControllerApis and ReplicationControlManager's
createPartitions).

The new partitions start empty. On a broker alone they are this broker's; in
a cluster the election gives them leaders, so a replica assignment, which
would name them, is refused there. Adding partitions to an internal topic is
refused: its coordinator places groups and transactional ids by its partition
count (Kafka's broker accepts it, and its groups lose their offsets).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kio.schema.create_partitions.v3 import CreatePartitionsRequest, CreatePartitionsResponse
from kio.schema.create_partitions.v3.request import (
    CreatePartitionsAssignment,
    CreatePartitionsTopic,
)
from kio.schema.create_partitions.v3.response import CreatePartitionsTopicResult

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.topic_changes import add_partitions
from kgroups.topics.names import MAX_PARTITIONS_PER_TOPIC, Topic

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: CreatePartitionsRequest
) -> CreatePartitionsResponse:
    counts = Counter(t.name for t in request.topics)
    results: list[CreatePartitionsTopicResult] = []
    answered: set[str] = set()
    for wanted in request.topics:
        if wanted.name in answered:
            continue
        answered.add(wanted.name)
        if counts[wanted.name] > 1:
            results.append(_result(wanted.name, ErrorCode.invalid_request, "Duplicate topic name."))
            continue
        try:
            topic = _check(broker, wanted)
            if not request.validate_only:
                await add_partitions(broker, topic, wanted.count)
        except KafkaError as e:
            results.append(_result(wanted.name, e.error_code, e.message))
            continue
        results.append(_result(wanted.name, ErrorCode.none, None))
    return CreatePartitionsResponse(throttle_time=NO_THROTTLE, results=tuple(results))


def _check(broker: BrokerApi, wanted: CreatePartitionsTopic) -> Topic:
    """The topic, if it may grow to ``wanted.count`` partitions as asked."""
    name, count = wanted.name, wanted.count
    topic = broker.topics.get(name)
    if topic is None or broker.topics.is_reserved(name):
        # Also while being created, deleted or grown: a client retries this error.
        raise KafkaError(ErrorCode.unknown_topic_or_partition)
    if topic.internal:
        raise KafkaError(
            ErrorCode.invalid_request,
            f"The number of partitions of the internal topic {name} cannot be changed.",
        )
    current = topic.partitions
    if count == current:
        raise KafkaError(ErrorCode.invalid_partitions, f"Topic already has {current} partition(s).")
    if count < current:
        raise KafkaError(
            ErrorCode.invalid_partitions,
            f"The topic {name} currently has {current} partition(s); {count} would not be "
            "an increase.",
        )
    if count > MAX_PARTITIONS_PER_TOPIC:
        raise KafkaError(
            ErrorCode.invalid_partitions,
            f"Number of partitions must be between 1 and {MAX_PARTITIONS_PER_TOPIC}.",
        )
    if wanted.assignments is not None:
        _check_assignments(broker, wanted.assignments, count - current)
    return topic


def _check_assignments(
    broker: BrokerApi,
    assignments: Sequence[CreatePartitionsAssignment],
    additional: int,
) -> None:
    if len(assignments) != additional:
        raise KafkaError(
            ErrorCode.invalid_replica_assignment,
            f"Attempted to add {additional} additional partition(s), but only "
            f"{len(assignments)} assignment(s) were specified.",
        )
    if broker.cluster is not None:
        raise KafkaError(
            ErrorCode.invalid_replica_assignment,
            "Replica assignments are not supported in a cluster: the election places "
            "each new partition's leader.",
        )
    for a in assignments:
        replicas = sorted(a.broker_ids)
        if not replicas:
            raise KafkaError(
                ErrorCode.invalid_replica_assignment,
                "The manual partition assignment includes an empty replica list.",
            )
        previous = None
        for b in replicas:
            if b != broker.broker_id:
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment,
                    f"The manual partition assignment includes broker {b}, but no such "
                    "broker is registered.",
                )
            if b == previous:
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment,
                    f"The manual partition assignment includes the broker {b} more than once.",
                )
            previous = b


def _result(name: str, error: ErrorCode, message: str | None) -> CreatePartitionsTopicResult:
    return CreatePartitionsTopicResult(
        name=name,  # type: ignore[arg-type]
        error_code=error,
        error_message=message,
    )
