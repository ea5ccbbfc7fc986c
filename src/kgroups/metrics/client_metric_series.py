"""Clients' pushed metrics (KIP-714) as Prometheus series, until they stop.

Each client instance's points keep their last value; a delta (the broker
asks for delta temporality, so a client's counters come as changes since its
last push) is added to what was there, so a counter reads as a total. A
metric ``org.apache.kafka.producer.node.request.latency.avg`` is the family
``kafka_client_producer_node_request_latency_avg`` (other names keep their
prefix), a monotonic sum ends in ``_total``; each series is labelled by the
client instance (client_instance_id, client_id, client_software_name,
client_software_version) and by the point's own attributes. A client's
series go when it has not pushed for ``max(60 s, 3 push intervals)``; a
client keeps at most ``MAX_SERIES_PER_CLIENT`` of them (the first ones it
pushed), so what one client can make the broker hold is bounded.

A series' label text is built once, when it first comes; a scrape writes
the texts and values as they are, family by family.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from kgroups.metrics.exposition import Exposition, label_text
from kgroups.metrics.otlp import Point

__all__ = ["MAX_SERIES_PER_CLIENT", "ClientMetricSeries", "family_name"]

MAX_SERIES_PER_CLIENT = 10_000
_PREFIX = "kafka_client_"
_KAFKA = "org.apache.kafka."
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]")
_KIND_TYPES = {"gauge": "gauge", "sum": "gauge", "counter": "counter"}
_HELP = "Pushed by clients (KIP-714)."

Labels = tuple[tuple[str, str], ...]


def family_name(metric: str, kind: str) -> str:
    name = metric[len(_KAFKA) :] if metric.startswith(_KAFKA) else metric
    name = _PREFIX + _NOT_NAME.sub("_", name)
    if kind == "counter" and not name.endswith(("_total", "_count", "_sum")):
        name += "_total"
    return name


def _label_name(key: str) -> str:
    name = _NOT_NAME.sub("_", key)
    if name.startswith("__"):  # reserved by Prometheus
        return "attribute" + name
    return "_" + name if not name or name[0].isdigit() else name


@dataclass(slots=True)
class _Client:
    labels: Labels
    own: frozenset[str]
    """The client's label names, which a point's attributes may not take."""
    expires_ms: int
    # family -> (type, {label text: value})
    families: dict[str, tuple[str, dict[str, float]]] = field(default_factory=dict)
    # (metric name, kind, attributes) -> (family, label text): built once.
    keys: dict[tuple[str, str, Labels], tuple[str, str]] = field(default_factory=dict)
    count: int = 0


class ClientMetricSeries:
    def __init__(self, max_series_per_client: int = MAX_SERIES_PER_CLIENT) -> None:
        self._clients: dict[uuid.UUID, _Client] = {}
        self._max_series = max_series_per_client

    def __len__(self) -> int:
        return len(self._clients)

    def record(
        self, instance_id: uuid.UUID, labels: Labels, points: Iterable[Point], expires_ms: int
    ) -> None:
        client = self._clients.get(instance_id)
        if client is None:
            own = frozenset(name for name, _ in labels)
            client = self._clients[instance_id] = _Client(labels, own, expires_ms)
        client.expires_ms = expires_ms
        for point in points:
            key = client.keys.get((point.name, point.kind, point.attributes))
            if key is None:
                key = self._new_key(client, point)
                if key is None:
                    continue
            family, text = key
            values = client.families[family][1]
            if point.delta:
                values[text] = values.get(text, 0.0) + point.value
            else:
                values[text] = point.value

    def _new_key(self, client: _Client, point: Point) -> tuple[str, str] | None:
        if client.count >= self._max_series:
            return None
        family = family_name(point.name, point.kind)
        kind = _KIND_TYPES[point.kind]
        known = client.families.setdefault(family, (kind, {}))
        if known[0] != kind:
            return None  # the same family pushed with another type: left out
        attributes = [
            (name, value)
            for key, value in point.attributes
            if (name := _label_name(key)) not in client.own
        ]
        text = label_text([*client.labels, *dict(attributes).items()])
        client.keys[(point.name, point.kind, point.attributes)] = (family, text)
        client.count += 1
        return family, text

    def expire(self, now_ms: int) -> None:
        for instance_id in [i for i, c in self._clients.items() if c.expires_ms <= now_ms]:
            del self._clients[instance_id]

    def write(self, out: Exposition) -> None:
        families: dict[str, tuple[str, list[str], list[float]]] = {}
        for client in self._clients.values():
            for family, (kind, values) in client.families.items():
                entry = families.setdefault(family, (kind, [], []))
                if entry[0] == kind and values:  # another client's other type: left out
                    entry[1].extend(values)
                    entry[2].extend(values.values())
        for family in sorted(families):
            kind, texts, numbers = families[family]
            if texts:
                out.family(family, kind, _HELP)
                out.series(family, texts, numbers)
