"""Consumer group (KIP-848) settings, under Kafka's names and with its defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kgroups.coordinator.consumer_assignors.registry import DEFAULT_ASSIGNORS


class GroupOverrides(Protocol):
    def group_configs(self, group_id: str) -> Mapping[str, str]:
        """A group's own configs (IncrementalAlterConfigs on the group), checked already."""
        ...


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    # group.consumer.session.timeout.ms
    session_timeout_ms: int = 45_000
    # group.consumer.heartbeat.interval.ms
    heartbeat_interval_ms: int = 5_000
    # group.consumer.max.size
    max_size: int = 2_147_483_647
    # group.consumer.assignors: the first is the default
    assignors: str = DEFAULT_ASSIGNORS
    # group.consumer.regex.refresh.interval.ms: how long a regex resolution
    # stands before a heartbeat resolves it again, topics changed or not
    regex_refresh_interval_ms: int = 600_000
    # group.consumer.migration.policy: disabled, upgrade, downgrade or bidirectional
    migration_policy: str = "bidirectional"
    # Per-group consumer.session.timeout.ms and consumer.heartbeat.interval.ms.
    overrides: GroupOverrides | None = field(default=None, compare=False)

    def session_timeout_for(self, group_id: str) -> int:
        return self._own(group_id, "consumer.session.timeout.ms", self.session_timeout_ms)

    def heartbeat_interval_for(self, group_id: str) -> int:
        return self._own(group_id, "consumer.heartbeat.interval.ms", self.heartbeat_interval_ms)

    def _own(self, group_id: str, key: str, default: int) -> int:
        if self.overrides is None:
            return default
        value = self.overrides.group_configs(group_id).get(key)
        return default if value is None else int(value)

    @property
    def upgrade_enabled(self) -> bool:
        """A classic group may become a consumer group when a consumer-protocol member joins."""
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        """A consumer group whose members all use the classic protocol may become classic."""
        return self.migration_policy in ("downgrade", "bidirectional")
