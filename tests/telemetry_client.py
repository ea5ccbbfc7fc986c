"""A client's telemetry requests (KIP-714) on one connection, as a client
keeps it: ApiVersions first (naming its software), then
GetTelemetrySubscriptions and PushTelemetry."""

from __future__ import annotations

import socket
import uuid
from typing import Any

from kio.schema.api_versions.v3 import ApiVersionsRequest
from kio.schema.get_telemetry_subscriptions.v0 import GetTelemetrySubscriptionsRequest
from kio.schema.push_telemetry.v0 import PushTelemetryRequest

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8, i32
from kgroups.records.compression import NONE

from raw_wire import call


class Client:
    """One connection, as a client keeps it: ApiVersions first (its software)."""

    def __init__(self, port: int, name: str = "apache-kafka-java", version: str = "3.9.0") -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), 20)
        versions, _ = call(
            self.sock,
            ApiVersionsRequest(client_software_name=name, client_software_version=version),
        )
        self.advertised = {a.api_key: (a.min_version, a.max_version) for a in versions.api_keys}
        self.instance: uuid.UUID | None = None
        self.subscription = 0

    def get(self, instance: uuid.UUID | None = None) -> Any:
        request = GetTelemetrySubscriptionsRequest(client_instance_id=instance or self.instance)
        response, _ = call(self.sock, request)
        if response.error_code == ErrorCode.none:
            self.instance, self.subscription = response.client_instance_id, response.subscription_id
        return response

    def push(
        self,
        metrics: bytes = b"",
        *,
        compression: int = NONE,
        terminating: bool = False,
        subscription: int | None = None,
    ) -> ErrorCode:
        request = PushTelemetryRequest(
            client_instance_id=self.instance,
            subscription_id=i32(self.subscription if subscription is None else subscription),
            terminating=terminating,
            compression_type=i8(compression),
            metrics=metrics,
        )
        response, _ = call(self.sock, request)
        return ErrorCode(response.error_code)

    def close(self) -> None:
        self.sock.close()
