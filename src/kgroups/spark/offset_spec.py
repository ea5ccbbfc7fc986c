"""Where a read starts or ends, and offsets as the JSON Spark keeps in its checkpoint.

A spec is ``earliest``, ``latest``, a timestamp (the first offset whose record is
at least that late), or per-partition offsets as in Spark's Kafka source::

    {"orders": {"0": 23, "1": -2}, "payments": {"0": -1}}     # -2 earliest, -1 latest

Spark compares a stream's offsets as JSON strings to decide whether a trigger
has new data, so ``offsets_json`` always writes topics and partitions in sorted
order: the same positions must give the same string every time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetSpec",
    "Offsets",
    "offsets_from_json",
    "offsets_json",
    "parse_offset_spec",
]

EARLIEST = -2
LATEST = -1

Offsets = dict[tuple[str, int], int]


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    kind: str  # earliest | latest | timestamp | partitions
    timestamp: int | None = None
    partitions: Mapping[tuple[str, int], int] = field(default_factory=dict)

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls("earliest")

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls("latest")

    @classmethod
    def at_time(cls, timestamp: int) -> OffsetSpec:
        return cls("timestamp", timestamp=timestamp)

    def wanted(self, tp: tuple[str, int]) -> int:
        """What to ask ListOffsets for: -2, -1 or a timestamp; per-partition specs
        fall back to ``earliest`` for partitions they do not name (new ones)."""
        if self.kind == "earliest":
            return EARLIEST
        if self.kind == "latest":
            return LATEST
        if self.kind == "timestamp":
            assert self.timestamp is not None
            return self.timestamp
        return self.partitions.get(tp, EARLIEST)

    def exact(self, tp: tuple[str, int]) -> int | None:
        """A concrete offset given for ``tp``, if any (not -1 / -2)."""
        if self.kind != "partitions":
            return None
        offset = self.partitions.get(tp)
        return offset if offset is not None and offset >= 0 else None


def parse_offset_spec(text: str) -> OffsetSpec:
    value = text.strip()
    if value.lower() in ("earliest", "latest"):
        return OffsetSpec(value.lower())
    try:
        raw = json.loads(value)
    except ValueError:
        example = '{"topic":{"0":23,"1":-2}}'
        raise ValueError(f"{text!r} is neither earliest, latest nor JSON like {example}") from None
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"{text!r} must be a JSON object of topics")
    partitions: Offsets = {}
    for topic, offsets in raw.items():
        if not isinstance(offsets, dict):
            raise ValueError(f"topic {topic!r} must map partitions to offsets")
        for partition, offset in offsets.items():
            try:
                p, o = int(partition), int(offset)
            except (TypeError, ValueError):
                raise ValueError(f"{topic}-{partition}: {offset!r} is not an offset") from None
            if p < 0 or o < EARLIEST:
                raise ValueError(f"{topic}-{partition}: {offset} is not an offset, -1 or -2")
            partitions[(str(topic), p)] = o
    return OffsetSpec("partitions", partitions=partitions)


def offsets_json(offsets: Mapping[tuple[str, int], int]) -> dict[str, dict[str, int]]:
    """Offsets as checkpoint JSON with a stable key order."""
    out: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = offsets[(topic, partition)]
    return out


def offsets_from_json(raw: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {(topic, int(p)): int(o) for topic, parts in raw.items() for p, o in parts.items()}
