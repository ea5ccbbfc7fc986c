"""Heartbeats answered without leaving the connection's loop turn.

A heartbeat whose group has no write waiting for its fsync is answered on the
spot: its four fields read by hand, the shard asked synchronously, the answer
built from cached bytes (protocol/heartbeat_wire.py). So is a KIP-848
member's ConsumerGroupHeartbeat that carries nothing but its member id and
epoch, when the shard finds that it changes nothing but the member's session
deadline (protocol/consumer_heartbeat_wire.py). Every other heartbeat, and
any frame this path does not take, goes through ``dispatch``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgroups.protocol.consumer_heartbeat_wire import read_unchanged_heartbeat, unchanged_answer
from kgroups.protocol.heartbeat_wire import heartbeat_answer, read_heartbeat

if TYPE_CHECKING:
    from kgroups.runtime.coordinator_runtime import CoordinatorRuntime

# A request frame starts with its API key, int16 big-endian.
HEARTBEAT_PREFIX = b"\x00\x0c"
CONSUMER_HEARTBEAT_PREFIX = b"\x00\x44"


def answer_heartbeat(coordinator: CoordinatorRuntime, frame: bytes) -> bytes | None:
    """The response frame, or None: the request takes the general path."""
    read = read_heartbeat(frame)
    if read is None:
        return None
    version, correlation_id, fields = read
    if not fields.group_id:
        return None
    error = coordinator.heartbeat_now(
        fields.group_id, fields.member_id, fields.group_instance_id, fields.generation_id
    )
    if error is None:
        return None
    return heartbeat_answer(version, correlation_id, error)


def answer_consumer_heartbeat(
    coordinator: CoordinatorRuntime, frame: bytes, client_host: str
) -> bytes | None:
    """The response frame, or None: the request takes the general path."""
    read = read_unchanged_heartbeat(frame)
    if read is None or not coordinator.consumer_protocol_enabled:
        return None
    version, correlation_id, fields = read
    interval_ms = coordinator.consumer_heartbeat_now(fields, client_host)
    if interval_ms is None:
        return None
    return unchanged_answer(
        version, correlation_id, fields.member_id, fields.member_epoch, interval_ms
    )
