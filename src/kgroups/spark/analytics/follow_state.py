"""What ``kgroups analytics --follow`` keeps between micro-batches, and nothing more.

One Burrow window (the last ``window`` commits) per (group, topic, partition)
the cluster still holds, and the last offsets-topic offset applied per offsets
partition. Tombstones end a window: an offset deletion (OffsetDelete, or the
coordinator expiring the offset after ``offsets.retention.minutes``) its
partition's, a group deletion all of the group's. So the state follows the
cluster's committed offsets, however many short-lived groups come and go over
the hours.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from kgroups.spark.analytics.burrow import Commit

__all__ = ["FollowState", "Key"]

Key = tuple[str, str, int]


class FollowState:
    def __init__(self, window: int) -> None:
        self.window = window
        self.windows: dict[Key, deque[Commit]] = {}
        self.applied: dict[int, int] = {}
        """The last offset applied per offsets-topic partition: a replayed record is skipped."""

    def fresh(self, records: Iterable[Any]) -> list[Any]:
        """The records (with ``offsets_partition`` and ``offsets_offset``, in log
        order) not applied yet; they count as applied from now on."""
        out = []
        for r in records:
            if r.offsets_offset > self.applied.get(r.offsets_partition, -1):
                self.applied[r.offsets_partition] = r.offsets_offset
                out.append(r)
        return out

    def add(self, key: Key, commit: Commit) -> None:
        self.windows.setdefault(key, deque(maxlen=self.window)).append(commit)

    def delete_offset(self, key: Key) -> None:
        self.windows.pop(key, None)

    def delete_group(self, group: str) -> None:
        for key in [k for k in self.windows if k[0] == group]:
            del self.windows[key]

    def to_json(self) -> dict[str, Any]:
        return {
            "applied": {str(p): o for p, o in self.applied.items()},
            "windows": [
                {"group": g, "topic": t, "partition": p, "commits": [list(c) for c in w]}
                for (g, t, p), w in sorted(self.windows.items())
            ],
        }

    @classmethod
    def from_json(cls, state: dict[str, Any], window: int) -> FollowState:
        restored = cls(window)
        restored.applied = {int(p): o for p, o in state["applied"].items()}
        for entry in state["windows"]:
            for c in entry["commits"]:
                restored.add((entry["group"], entry["topic"], entry["partition"]), Commit(*c))
        return restored
