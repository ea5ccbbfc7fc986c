"""Client telemetry (KIP-714): which metrics each client instance is asked
for, and the checks of what it pushes, as Kafka's ClientMetricsManager does.

Theory of operation. A client asks GetTelemetrySubscriptions with the zero
UUID and is given a client instance id; the subscriptions (CLIENT_METRICS
configs, config/client_metrics.py) that match it make its subscription: the
union of their metric prefixes (``*`` alone if any asks for all), the
smallest of their intervals (five minutes if none matches) and a
subscription id, a CRC32C of both XORed with the instance id's hash. The id
depends on nothing else, so another broker computes the same one and accepts
a push the first broker's answer prepared. The client then pushes every
interval; a push or a second Get earlier than that is throttled
(THROTTLING_QUOTA_EXCEEDED), except the first push after a Get, which the
client's jitter may bring early. When the subscriptions change, every
instance's subscription is computed anew at its next request, with fresh
timestamps: its next push, with the old id, gets UNKNOWN_SUBSCRIPTION_ID
and the Get that follows is answered at once (so is one after a push with
an unsupported compression type), as KIP-714 intends; Kafka 4.x throttles
that Get, its check of the last error being always true. A push marked
terminating is the client's last: any push after it is INVALID_REQUEST.

An instance is forgotten when the connection that made it closes, or
``max(60 s, 3 intervals)`` after its last request; at most 16384 are kept,
the least recently used leaving first. Time comes from an injected clock.
Accepted metrics (decompressed, decoded from OTLP) go to the receiver, the
Prometheus endpoint's store; reading them (``decode``) touches no state, so
the broker does it off its loop, between ``check_push`` and ``take``. A
payload may decompress to ten times ``telemetry.max.bytes``, no more. The
broker advertises the telemetry APIs only when there is a receiver, as Kafka
does only with a telemetry receiver configured.
"""

from __future__ import annotations

import datetime
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kio.static.primitive import i32Timedelta

from kgroups.clock import Clock
from kgroups.config.client_metrics import (
    ALL_METRICS,
    DEFAULT_INTERVAL_MS,
    Subscription,
    parse_subscription,
)
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol.types import i8, i32
from kgroups.records.checksum import crc32c
from kgroups.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, decompress

# The telemetry APIs' schemas and the OTLP reader are imported with the first
# telemetry request (this module is imported with the broker, which may never
# receive one); the receiver only with the metrics endpoint that shows it.
if TYPE_CHECKING:
    from kio.schema.get_telemetry_subscriptions.v0 import (
        GetTelemetrySubscriptionsRequest,
        GetTelemetrySubscriptionsResponse,
    )
    from kio.schema.push_telemetry.v0 import PushTelemetryRequest, PushTelemetryResponse

    from kgroups.metrics.client_metric_series import ClientMetricSeries
    from kgroups.metrics.otlp import Point

__all__ = [
    "AcceptedPush",
    "ClientIdentity",
    "ClientTelemetry",
    "TelemetryStats",
    "decode",
    "subscription_id",
]

# In Kafka's order of preference.
ACCEPTED_COMPRESSION = (ZSTD, LZ4, GZIP, SNAPPY)
_KNOWN_COMPRESSION = frozenset((NONE, *ACCEPTED_COMPRESSION))
MAX_INSTANCES = 16384
DEFAULT_EXPIRY_MS = 60_000
_PURGE_EVERY_MS = 1000
# A payload may decompress to this many times telemetry.max.bytes (which
# bounds it as sent), no more: what one push can make the broker read.
DECOMPRESSED_FACTOR = 10
# The zero UUID and the metadata topic's id: never an instance's.
_RESERVED = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})
_NO_TIME = -(1 << 62)
# A push refused with these is followed at once by a Get (KIP-714), which is
# answered: Kafka means to, but its check throttles it anyway.
_ASK_AGAIN_AT_ONCE = frozenset(
    (ErrorCode.unknown_subscription_id, ErrorCode.unsupported_compression_type)
)
_NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


@dataclass(frozen=True, slots=True)
class ClientIdentity:
    """What a subscription's ``match`` selects on, from the request and its
    connection (the software name and version its ApiVersions gave)."""

    client_id: str
    software_name: str | None
    software_version: str | None
    address: str | None
    port: int | None

    def attributes(self, instance_id: uuid.UUID) -> dict[str, str | None]:
        return {
            "client_instance_id": str(instance_id),
            "client_id": self.client_id,
            "client_software_name": self.software_name,
            "client_software_version": self.software_version,
            "client_source_address": self.address,
            "client_source_port": None if self.port is None else str(self.port),
        }


@dataclass(slots=True)
class TelemetryStats:
    """Kafka's client-metrics group of broker metrics."""

    unknown_subscription_requests: int = 0
    throttled: int = 0
    exported: int = 0
    export_errors: int = 0


@dataclass(slots=True)
class _Instance:
    instance_id: uuid.UUID
    identity: ClientIdentity
    subscription_id: int
    version: int
    metrics: tuple[str, ...]
    interval_ms: int
    expires_ms: int
    last_get_ms: int = _NO_TIME
    last_push_ms: int = _NO_TIME
    terminating: bool = False
    last_error: ErrorCode = ErrorCode.none
    connections: set[object] = field(default_factory=set)

    def may_get(self, now: int) -> bool:
        if now - max(self.last_get_ms, self.last_push_ms) >= self.interval_ms:
            self.last_get_ms = now
            return True
        if self.last_error in _ASK_AGAIN_AT_ONCE:
            self.last_get_ms = now  # its next push is the first after a Get
        return False

    def may_push(self, now: int) -> bool:
        # The first push after a Get may come early: clients add jitter.
        if self.last_get_ms > self.last_push_ms or now - self.last_push_ms >= self.interval_ms:
            self.last_push_ms = now
            return True
        return False


@dataclass(frozen=True, slots=True)
class AcceptedPush:
    """A push accepted, its metrics not read yet."""

    instance_id: uuid.UUID
    labels: tuple[tuple[str, str], ...]
    expires_ms: int
    compression: int
    metrics: bytes
    decompressed_limit: int


def decode(accepted: AcceptedPush) -> list[Point] | None:
    """The pushed points, or None if the payload does not decompress (within
    its limit) or is not OTLP. Touches nothing shared: safe on any thread."""
    from kgroups.metrics.otlp import BadMetrics, read_metrics_data

    try:
        data = decompress(accepted.compression, accepted.metrics, accepted.decompressed_limit)
        return read_metrics_data(data)
    except (KafkaError, BadMetrics):
        return None


def subscription_id(metrics: tuple[str, ...], interval_ms: int, instance_id: uuid.UUID) -> int:
    """CRC32C of the metrics (sorted) and the interval, XORed with the
    instance id's hash as Kafka's Uuid computes it; a signed 32-bit int."""
    text = "[" + ", ".join(metrics) + "]" + str(interval_ms)
    crc = crc32c(text.encode())
    both = (instance_id.int >> 64) ^ (instance_id.int & ((1 << 64) - 1))
    hashed = (both >> 32) ^ (both & 0xFFFFFFFF)
    return _signed32(crc ^ hashed)


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class ClientTelemetry:
    def __init__(
        self,
        clock: Clock,
        max_bytes: int,
        receiver: ClientMetricSeries | None,
        *,
        expiry_ms: int = DEFAULT_EXPIRY_MS,
        max_instances: int = MAX_INSTANCES,
    ) -> None:
        self._clock = clock
        self.max_bytes = max_bytes
        self.receiver = receiver
        """Where accepted metrics go; None: nobody receives them."""
        self._expiry_ms = expiry_ms
        self._max_instances = max_instances
        self._subscriptions: dict[str, Subscription] = {}
        self._configs: dict[str, dict[str, str]] = {}
        self._version = 0
        self._instances: OrderedDict[uuid.UUID, _Instance] = OrderedDict()
        self._by_connection: dict[object, uuid.UUID] = {}
        self._next_purge = _NO_TIME
        self.stats = TelemetryStats()

    # -- subscriptions -----------------------------------------------------

    @property
    def subscriptions(self) -> Mapping[str, Subscription]:
        return self._subscriptions

    def update_subscription(self, name: str, configs: Mapping[str, str]) -> None:
        """Take a subscription's configs as they now are (none: it is gone)."""
        if not configs:
            if self._subscriptions.pop(name, None) is not None:
                self._configs.pop(name, None)
                self._version += 1
            return
        if self._configs.get(name) == dict(configs):
            return  # a cluster re-read: nothing changed
        subscription = parse_subscription(name, configs)
        self._subscriptions[name] = subscription
        self._configs[name] = dict(configs)
        self._version += 1

    # -- requests ------------------------------------------------------------

    @property
    def instance_count(self) -> int:
        return len(self._instances)

    def get_subscriptions(
        self,
        request: GetTelemetrySubscriptionsRequest,
        identity: ClientIdentity,
        connection: object = None,
    ) -> GetTelemetrySubscriptionsResponse:
        now = self._clock.now_ms()
        self._expire_now_and_then(now)
        instance_id = request.client_instance_id
        if instance_id is None or instance_id.int == 0:
            instance_id = self._new_instance_id()
        instance = self._instance(instance_id, identity, connection, now)
        if not instance.may_get(now) and instance.last_error not in _ASK_AGAIN_AT_ONCE:
            self.stats.throttled += 1
            return _get_error(ErrorCode.throttling_quota_exceeded)
        instance.last_error = ErrorCode.none
        from kio.schema.get_telemetry_subscriptions.v0 import GetTelemetrySubscriptionsResponse

        return GetTelemetrySubscriptionsResponse(
            throttle_time=_NO_THROTTLE,
            error_code=ErrorCode.none,
            client_instance_id=instance_id,
            subscription_id=i32(instance.subscription_id),
            accepted_compression_types=tuple(i8(c) for c in ACCEPTED_COMPRESSION),
            push_interval=i32Timedelta.parse(datetime.timedelta(milliseconds=instance.interval_ms)),
            telemetry_max_bytes=i32(self.max_bytes),
            delta_temporality=True,
            requested_metrics=instance.metrics,
        )

    def push(
        self,
        request: PushTelemetryRequest,
        identity: ClientIdentity,
        connection: object = None,
    ) -> PushTelemetryResponse:
        """``check_push``, ``decode`` and ``take`` in one (all on the caller's thread)."""
        checked = self.check_push(request, identity, connection)
        if isinstance(checked, AcceptedPush):
            return self.take(checked, decode(checked))
        return checked

    def check_push(
        self,
        request: PushTelemetryRequest,
        identity: ClientIdentity,
        connection: object = None,
    ) -> PushTelemetryResponse | AcceptedPush:
        """The answer to a push, or, when it is accepted with metrics for the
        receiver, what ``decode`` (anywhere) and then ``take`` make of it."""
        instance_id = request.client_instance_id
        if instance_id is None or instance_id in _RESERVED:
            return _push_answer(ErrorCode.invalid_request)
        now = self._clock.now_ms()
        self._expire_now_and_then(now)
        instance = self._instance(instance_id, identity, connection, now)
        try:
            error = self._refusal(request, instance, now)
        finally:
            instance.terminating = request.terminating
        instance.last_error = error
        if error is not ErrorCode.none or not request.metrics or self.receiver is None:
            return _push_answer(error)
        attributes = instance.identity.attributes(instance_id)
        return AcceptedPush(
            instance_id=instance_id,
            labels=(
                ("client_instance_id", str(instance_id)),
                ("client_id", attributes["client_id"] or ""),
                ("client_software_name", attributes["client_software_name"] or ""),
                ("client_software_version", attributes["client_software_version"] or ""),
            ),
            expires_ms=self._expiry(instance, now),
            compression=request.compression_type,
            metrics=request.metrics,
            decompressed_limit=DECOMPRESSED_FACTOR * self.max_bytes,
        )

    def take(self, accepted: AcceptedPush, points: list[Point] | None) -> PushTelemetryResponse:
        """Record the points ``decode`` read (None: it could not: INVALID_RECORD)."""
        instance = self._instances.get(accepted.instance_id)
        if points is None:
            self.stats.export_errors += 1
            if instance is not None:
                instance.last_error = ErrorCode.invalid_record
            return _push_answer(ErrorCode.invalid_record)
        if self.receiver is not None:
            self.receiver.record(accepted.instance_id, accepted.labels, points, accepted.expires_ms)
        self.stats.exported += 1
        return _push_answer(ErrorCode.none)

    def disconnected(self, connection: object) -> None:
        """The connection closed: the instance it made is forgotten, as in Kafka
        (its pushed metrics stay on the endpoint until they expire)."""
        instance_id = self._by_connection.pop(connection, None)
        if instance_id is not None:
            instance = self._instances.pop(instance_id, None)
            if instance is not None:
                self._forget_connections(instance)

    # -- internals -------------------------------------------------------

    def _refusal(self, request: PushTelemetryRequest, instance: _Instance, now: int) -> ErrorCode:
        if instance.terminating:
            return ErrorCode.invalid_request
        if not instance.may_push(now) and not request.terminating:
            self.stats.throttled += 1
            return ErrorCode.throttling_quota_exceeded
        if request.subscription_id != instance.subscription_id:
            self.stats.unknown_subscription_requests += 1
            return ErrorCode.unknown_subscription_id
        if request.compression_type not in _KNOWN_COMPRESSION:
            return ErrorCode.unsupported_compression_type
        if len(request.metrics) > self.max_bytes:
            return ErrorCode.telemetry_too_large
        return ErrorCode.none

    def _new_instance_id(self) -> uuid.UUID:
        while True:
            candidate = uuid.uuid4()
            if candidate not in self._instances and candidate not in _RESERVED:
                return candidate

    def _instance(
        self, instance_id: uuid.UUID, identity: ClientIdentity, connection: object, now: int
    ) -> _Instance:
        instance = self._instances.get(instance_id)
        if instance is None:
            instance = self._create(instance_id, identity, connection, now)
        elif instance.version < self._version:
            # The subscriptions changed: computed anew, from the first request's identity.
            fresh = self._create(instance_id, instance.identity, connection, now)
            fresh.connections |= instance.connections
            instance = fresh
        else:
            self._instances.move_to_end(instance_id)
        instance.expires_ms = self._expiry(instance, now)
        return instance

    def _create(
        self, instance_id: uuid.UUID, identity: ClientIdentity, connection: object, now: int
    ) -> _Instance:
        metrics: set[str] = set()
        interval = DEFAULT_INTERVAL_MS
        attributes = identity.attributes(instance_id)
        for subscription in self._subscriptions.values():
            if subscription.matches(attributes):
                metrics |= subscription.metrics
                interval = min(interval, subscription.interval_ms)
        wanted = (ALL_METRICS,) if ALL_METRICS in metrics else tuple(sorted(metrics))
        instance = _Instance(
            instance_id=instance_id,
            identity=identity,
            subscription_id=subscription_id(wanted, interval, instance_id),
            version=self._version,
            metrics=wanted,
            interval_ms=interval,
            expires_ms=now,
        )
        if connection is not None:
            self._by_connection[connection] = instance_id
            instance.connections.add(connection)
        self._instances[instance_id] = instance
        self._instances.move_to_end(instance_id)
        while len(self._instances) > self._max_instances:
            _id, oldest = self._instances.popitem(last=False)
            self._forget_connections(oldest)
        return instance

    def _expiry(self, instance: _Instance, now: int) -> int:
        return now + max(self._expiry_ms, 3 * instance.interval_ms)

    def _forget_connections(self, instance: _Instance) -> None:
        for connection in instance.connections:
            if self._by_connection.get(connection) == instance.instance_id:
                del self._by_connection[connection]

    def _expire_now_and_then(self, now: int) -> None:
        # Requests look for expired instances at most once a second: a scan.
        if now >= self._next_purge:
            self._next_purge = now + _PURGE_EVERY_MS
            self.expire(now)

    def expire(self, now: int) -> None:
        """Forget the instances and series not heard from in time."""
        for instance_id in [i for i, inst in self._instances.items() if inst.expires_ms <= now]:
            self._forget_connections(self._instances.pop(instance_id))
        if self.receiver is not None:
            self.receiver.expire(now)


def _get_error(error: ErrorCode) -> GetTelemetrySubscriptionsResponse:
    from kio.schema.get_telemetry_subscriptions.v0 import GetTelemetrySubscriptionsResponse

    return GetTelemetrySubscriptionsResponse(
        throttle_time=_NO_THROTTLE,
        error_code=error,
        client_instance_id=None,
        subscription_id=i32(0),
        push_interval=_NO_THROTTLE,
        telemetry_max_bytes=i32(0),
        delta_temporality=False,
    )


def _push_answer(error: ErrorCode) -> PushTelemetryResponse:
    from kio.schema.push_telemetry.v0 import PushTelemetryResponse

    return PushTelemetryResponse(throttle_time=_NO_THROTTLE, error_code=error)
