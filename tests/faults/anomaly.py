"""What the checker's rules yield: anomalies, and counts of what they checked."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Anomaly:
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


# A rule yields (what it checked, how many) and ("", an anomaly).
Finding = Iterable[tuple[str, "Anomaly | int"]]

# (topic, partition) -> offset -> value, as a final read found them; the
# topic is None in histories that name none.
Final = dict[tuple[str | None, int], dict[int, str]]
