"""Share group (KIP-932) membership settings, under Kafka's names and with
its defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


class GroupOverrides(Protocol):
    def group_configs(self, group_id: str) -> Mapping[str, str]: ...


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    # group.share.session.timeout.ms
    session_timeout_ms: int = 45_000
    # group.share.heartbeat.interval.ms
    heartbeat_interval_ms: int = 5_000
    # group.share.max.size
    max_size: int = 200
    # Per-group share.session.timeout.ms and share.heartbeat.interval.ms.
    overrides: GroupOverrides | None = field(default=None, compare=False)

    def session_timeout_for(self, group_id: str) -> int:
        return self._own(group_id, "share.session.timeout.ms", self.session_timeout_ms)

    def heartbeat_interval_for(self, group_id: str) -> int:
        return self._own(group_id, "share.heartbeat.interval.ms", self.heartbeat_interval_ms)

    def _own(self, group_id: str, key: str, default: int) -> int:
        if self.overrides is None:
            return default
        value = self.overrides.group_configs(group_id).get(key)
        return default if value is None else int(value)
