"""Client telemetry on the Prometheus endpoint: Kafka's client-metrics group
of broker metrics (instances, throttled and refused pushes, exports), then
the metrics the clients pushed (client_metric_series.py)."""

from __future__ import annotations

from kgroups.metrics.client_telemetry import ClientTelemetry
from kgroups.metrics.exposition import Exposition

__all__ = ["write_client_telemetry"]

_GROUP = "kafka_server_clientmetrics_"


def write_client_telemetry(out: Exposition, telemetry: ClientTelemetry, now_ms: int) -> None:
    telemetry.expire(now_ms)
    stats = telemetry.stats
    out.family(_GROUP + "instance_count", "gauge", "Client instances the broker keeps.")
    out.sample(_GROUP + "instance_count", telemetry.instance_count)
    for name, value, help_text in (
        (
            "unknown_subscription_request_total",
            stats.unknown_subscription_requests,
            "Pushes with an outdated or unknown subscription id.",
        ),
        ("throttle_total", stats.throttled, "Requests refused for coming before the interval."),
        ("plugin_export_total", stats.exported, "Pushed metrics taken by the endpoint."),
        ("plugin_error_total", stats.export_errors, "Pushed metrics that could not be read."),
    ):
        out.family(_GROUP + name, "counter", help_text)
        out.sample(_GROUP + name, value)
    if telemetry.receiver is not None:
        telemetry.receiver.write(out)
