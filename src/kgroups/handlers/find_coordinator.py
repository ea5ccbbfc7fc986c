"""FindCoordinator: the leader of the group's `__consumer_offsets` partition,
of the transactional id's `__transaction_state` partition (key type 1), or of
a share partition key's `__share_group_state` partition (key type 2, Kafka's
``group:topicId:partition`` with the topic id in Kafka's base64 form: where
the state of that share partition is kept).

Each coordinator runtime's ``leaders`` says who that is (this broker when it
runs alone; none while the partition has no leader: COORDINATOR_NOT_AVAILABLE).
Asking creates the internal topic on first use.
"""

from __future__ import annotations

import base64
import uuid
from typing import TYPE_CHECKING

from kio.schema.find_coordinator.v3 import FindCoordinatorResponse as FindCoordinatorResponseV3
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest, FindCoordinatorResponse
from kio.schema.find_coordinator.v4.response import Coordinator

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE, own_address
from kgroups.protocol.types import BrokerId, i32
from kgroups.runtime.shard_leaders import Leader

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

# error, message, node id, host, port
Found = tuple[ErrorCode, str | None, int, str, int]

GROUP = 0
TRANSACTION = 1
SHARE = 2


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: object
) -> FindCoordinatorResponse | FindCoordinatorResponseV3:
    if isinstance(request, FindCoordinatorRequest):
        found = [
            (key, _find(broker, ctx.listener, request.key_type, key))
            for key in request.coordinator_keys
        ]
        return FindCoordinatorResponse(
            throttle_time=NO_THROTTLE,
            coordinators=tuple(
                Coordinator(
                    key=key,
                    node_id=BrokerId(node),
                    host=host,
                    port=i32(port),
                    error_code=error,
                    error_message=message,
                )
                for key, (error, message, node, host, port) in found
            ),
        )
    # v0-v3 carry one key; v0 has no key type (groups only).
    key: str = getattr(request, "key")  # noqa: B009
    key_type: int = getattr(request, "key_type", GROUP)
    error, message, node, host, port = _find(broker, ctx.listener, key_type, key)
    return FindCoordinatorResponseV3(
        throttle_time=NO_THROTTLE,
        error_code=error,
        error_message=message,
        node_id=BrokerId(node),
        host=host,
        port=i32(port),
    )


def _find(broker: BrokerApi, listener: str, key_type: int, key: str) -> Found:
    if key_type == TRANSACTION:
        return _find_transaction(broker, listener, key)
    if key_type == SHARE:
        return _find_share(broker, listener, key)
    if key_type != GROUP:
        return _no_coordinator(ErrorCode.invalid_request, f"Unknown key type {key_type}")
    if not key:
        return _no_coordinator(ErrorCode.invalid_request, "Empty group id")
    coordinator = broker.coordinator
    if broker.faults.active:
        # Only an unavailable coordinator is unknown here; a moved or loading
        # one is found, and answers its group's requests with the error.
        error = broker.faults.coordinator_error_for(key)
        if error is ErrorCode.coordinator_not_available:
            return _no_coordinator(error, "The coordinator is not available (fault injected)")
    try:
        partition = coordinator.partition_for(key)  # creates the topic on first use
    except KafkaError as e:
        return _no_coordinator(e.error_code, e.message)
    return _at_leader(broker, listener, coordinator.leaders.leader_of(partition, listener))


def _find_transaction(broker: BrokerApi, listener: str, transactional_id: str) -> Found:
    if not transactional_id:
        return _no_coordinator(ErrorCode.invalid_request, "Empty transactional id")
    runtime = broker.txn_coordinator
    try:
        partition = runtime.partition_for(transactional_id)  # creates the topic on first use
    except KafkaError as e:
        return _no_coordinator(e.error_code, e.message)
    return _at_leader(broker, listener, runtime.leaders.leader_of(partition, listener))


def _find_share(broker: BrokerApi, listener: str, key: str) -> Found:
    parsed = _share_key(key)
    if parsed is None:
        return _no_coordinator(ErrorCode.invalid_request, f"Invalid share coordinator key: {key}")
    runtime = broker.share_coordinator
    runtime.ensure_topic()
    partition = runtime.partition_for(parsed)
    return _at_leader(broker, listener, runtime.leaders.leader_of(partition, listener))


def _share_key(key: str) -> tuple[str, uuid.UUID, int] | None:
    """``group:topicId:partition``, as Kafka's SharePartitionKey writes it."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        return None
    group, topic, partition = parts
    try:
        topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(topic + "=" * (-len(topic) % 4)))
        number = int(partition)
    except ValueError:
        return None
    if number < 0:
        return None
    return group, topic_id, number


def _at_leader(broker: BrokerApi, listener: str, leader: Leader | None) -> Found:
    if leader is None:
        return _no_coordinator(ErrorCode.coordinator_not_available, None)
    if leader.broker_id == broker.broker_id:
        return ErrorCode.none, None, leader.broker_id, *own_address(broker, listener)
    return ErrorCode.none, None, leader.broker_id, leader.host, leader.port


def _no_coordinator(error: ErrorCode, message: str | None) -> Found:
    return error, message, -1, "", -1
