"""Loop time one client telemetry push costs the broker (KIP-714): checks,
decompression, OTLP decoding and the Prometheus series, and one scrape of
the pushed series.

A push carries M metrics (10 by default, about what librdkafka pushes: 1.4 kB
of OTLP before zstd) with P data points each (1), compressed with zstd. C
client instances (1,000) push once each; then one scrape writes all their
series. Prints one JSON object:

- `payload_bytes` / `compressed_bytes`: one push's metrics, before and after zstd;
- `loop_us_p50` / `loop_us_max`: the part of one push on the broker's loop
  (checks, then recording the points), in microseconds;
- `decode_us_p50` / `decode_us_max`: decompressing and reading the OTLP
  payload, which the broker does on a worker thread;
- `scrape_ms`: writing every client's series for the endpoint (on the loop).

Usage:

    .venv/bin/python bench/client_telemetry.py [--clients 1000] [--metrics 10] [--points 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from kio.schema.get_telemetry_subscriptions.v0 import GetTelemetrySubscriptionsRequest
from kio.schema.push_telemetry.v0 import PushTelemetryRequest

from kgroups.clock import ManualClock
from kgroups.errors import ErrorCode
from kgroups.metrics.client_metric_series import ClientMetricSeries
from kgroups.metrics.client_telemetry import (
    AcceptedPush,
    ClientIdentity,
    ClientTelemetry,
    decode,
)
from kgroups.metrics.client_telemetry_metrics import write_client_telemetry
from kgroups.metrics.exposition import Exposition
from kgroups.protocol.types import i8, i32
from kgroups.records.compression import ZSTD, compress

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from otlp_payloads import gauge, metrics_data, number_point, sum_metric


def _payload(metrics: int, points: int) -> bytes:
    families = []
    for m in range(metrics):
        name = f"org.apache.kafka.producer.node.request.latency.m{m}"
        values = [number_point(1.5 * p, [("node.id", str(p))]) for p in range(points)]
        families.append(gauge(name, *values) if m % 2 else sum_metric(name, *values))
    return metrics_data(*families)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--metrics", type=int, default=10)
    parser.add_argument("--points", type=int, default=1)
    args = parser.parse_args()
    clock = ManualClock()
    telemetry = ClientTelemetry(clock, 1 << 20, ClientMetricSeries())
    telemetry.update_subscription("all", {"metrics": "*", "interval.ms": "1000"})
    payload = _payload(args.metrics, args.points)
    compressed = compress(ZSTD, payload)
    identity = ClientIdentity("bench", "librdkafka", "2.5.0", "127.0.0.1", 1)
    on_loop, decoding = [], []
    for _ in range(args.clients):
        got = telemetry.get_subscriptions(
            GetTelemetrySubscriptionsRequest(client_instance_id=None), identity
        )
        request = PushTelemetryRequest(
            client_instance_id=got.client_instance_id,
            subscription_id=i32(got.subscription_id),
            terminating=False,
            compression_type=i8(ZSTD),
            metrics=compressed,
        )
        started = time.perf_counter()
        checked = telemetry.check_push(request, identity)
        checked_at = time.perf_counter()
        assert isinstance(checked, AcceptedPush)
        points = decode(checked)
        decoded_at = time.perf_counter()
        answer = telemetry.take(checked, points)
        on_loop.append(checked_at - started + time.perf_counter() - decoded_at)
        decoding.append(decoded_at - checked_at)
        assert answer.error_code == ErrorCode.none
    started = time.perf_counter()
    out = Exposition()
    write_client_telemetry(out, telemetry, clock.now_ms())
    text = out.text()
    scrape = time.perf_counter() - started
    print(
        json.dumps(
            {
                "clients": args.clients,
                "metrics": args.metrics,
                "points": args.points,
                "payload_bytes": len(payload),
                "compressed_bytes": len(compressed),
                "loop_us_p50": round(statistics.median(on_loop) * 1e6, 1),
                "loop_us_max": round(max(on_loop) * 1e6, 1),
                "decode_us_p50": round(statistics.median(decoding) * 1e6, 1),
                "decode_us_max": round(max(decoding) * 1e6, 1),
                "scrape_ms": round(scrape * 1000, 1),
                "scrape_bytes": len(text),
            }
        )
    )


if __name__ == "__main__":
    main()
