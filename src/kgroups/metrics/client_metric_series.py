"""Clients' pushed metrics (KIP-714) as Prometheus series, until they stop.

Each client instance's points keep their last value; a delta (the broker
asks for delta temporality, so a client's counters come as changes since its
last push) is added to what was there, so a counter reads as a total. A
metric ``org.apache.kafka.producer.node.request.latency.avg`` is the family
``kafka_client_producer_node_request_latency_avg`` (other names keep their
prefix), a monotonic sum ends in ``_total``; each series is labelled by the
client instance (client_instance_id, client_id, client_software_name,
client_software_version) and by the point's own attributes. A client's
series go when it has not pushed for ``max(60 s, 3 push intervals)``.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from kgroups.metrics.exposition import Exposition
from kgroups.metrics.otlp import Point

__all__ = ["ClientMetricSeries", "family_name"]

_PREFIX = "kafka_client_"
_KAFKA = "org.apache.kafka."
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]")
_KIND_TYPES = {"gauge": "gauge", "sum": "gauge", "counter": "counter"}

Labels = tuple[tuple[str, str], ...]


def family_name(metric: str, kind: str) -> str:
    name = metric[len(_KAFKA) :] if metric.startswith(_KAFKA) else metric
    name = _PREFIX + _NOT_NAME.sub("_", name)
    if kind == "counter" and not name.endswith(("_total", "_count", "_sum")):
        name += "_total"
    return name


def _label_name(key: str) -> str:
    name = _NOT_NAME.sub("_", key)
    return "_" + name if not name or name[0].isdigit() else name


@dataclass(slots=True)
class _Client:
    labels: Labels
    expires_ms: int
    values: dict[tuple[str, Labels], float] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)


class ClientMetricSeries:
    def __init__(self) -> None:
        self._clients: dict[uuid.UUID, _Client] = {}

    def __len__(self) -> int:
        return len(self._clients)

    def record(
        self, instance_id: uuid.UUID, labels: Labels, points: list[Point], expires_ms: int
    ) -> None:
        client = self._clients.get(instance_id)
        if client is None:
            client = self._clients[instance_id] = _Client(labels, expires_ms)
        client.expires_ms = expires_ms
        own = {name for name, _ in labels}
        for point in points:
            family = family_name(point.name, point.kind)
            attributes = tuple(
                (name, value)
                for key, value in point.attributes
                if (name := _label_name(key)) not in own
            )
            key = (family, attributes)
            if point.delta:
                client.values[key] = client.values.get(key, 0.0) + point.value
            else:
                client.values[key] = point.value
            client.kinds.setdefault(family, _KIND_TYPES[point.kind])

    def expire(self, now_ms: int) -> None:
        for instance_id in [i for i, c in self._clients.items() if c.expires_ms <= now_ms]:
            del self._clients[instance_id]

    def write(self, out: Exposition) -> None:
        families: dict[str, tuple[str, list[tuple[Labels, float]]]] = {}
        for client in self._clients.values():
            for (family, attributes), value in client.values.items():
                kind = client.kinds[family]
                entry = families.setdefault(family, (kind, []))
                if entry[0] == kind:  # a client naming it with another type is left out
                    entry[1].append((client.labels + attributes, value))
        for family in sorted(families):
            kind, samples = families[family]
            out.family(family, kind, "Pushed by clients (KIP-714).")
            for labels, value in sorted(samples):
                out.sample(family, value, **dict(labels))
