"""The group coordinator's metrics, from read-only views of its groups.

Names follow Kafka's GroupMetadataManager gauges and group-coordinator-metrics
as the JMX exporter renders them. Rebalances are counted from the groups'
generations between scrapes (each completed rebalance, and each move to Empty,
bumps a group's generation), so no counter sits in the coordinator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kgroups.coordinator.state import GroupState
from kgroups.coordinator.views import GroupView
from kgroups.metrics.exposition import Exposition

_STATE_GAUGES = {
    GroupState.PREPARING_REBALANCE: "numgroupspreparingrebalance",
    GroupState.COMPLETING_REBALANCE: "numgroupscompletingrebalance",
    GroupState.STABLE: "numgroupsstable",
    GroupState.DEAD: "numgroupsdead",
    GroupState.EMPTY: "numgroupsempty",
}
_MANAGER = "kafka_coordinator_group_groupmetadatamanager_"
_COORDINATOR = "kafka_server_group_coordinator_metrics_"


class RebalanceCount:
    """Generations gained by the groups since the first scrape."""

    def __init__(self) -> None:
        self.total = 0
        self._generations: dict[str, int] | None = None

    def observe(self, groups: Iterable[GroupView]) -> None:
        seen = {g.group_id: g.generation_id for g in groups}
        before = self._generations
        if before is not None:
            for group, generation in seen.items():
                previous = before.get(group, 0)
                # A lower generation: the group was deleted and made again.
                self.total += generation - previous if generation >= previous else generation
        self._generations = seen


def write_groups(
    out: Exposition,
    groups: list[GroupView],
    rebalances: int,
    offset_commits: int,
    load_times_ms: Mapping[int, float],
) -> None:
    by_state = dict.fromkeys(_STATE_GAUGES, 0)
    for g in groups:
        by_state[g.state] += 1
    out.family(_MANAGER + "numgroups", "gauge", "Groups this broker coordinates.")
    out.sample(_MANAGER + "numgroups", len(groups))
    for state, name in _STATE_GAUGES.items():
        out.family(_MANAGER + name, "gauge", f"Groups in state {state.value}.")
        out.sample(_MANAGER + name, by_state[state])
    out.family(_MANAGER + "numoffsets", "gauge", "Committed offsets held.")
    out.sample(_MANAGER + "numoffsets", sum(len(g.offsets) for g in groups))
    out.family("kafka_consumergroup_members", "gauge", "Members of the group.")
    for g in groups:
        out.sample("kafka_consumergroup_members", len(g.members), group=g.group_id)
    out.family("kafka_consumergroup_state", "gauge", "1 for the group's current state.")
    for g in groups:
        out.sample("kafka_consumergroup_state", 1, group=g.group_id, state=g.state.value)
    out.family("kafka_consumergroup_generation", "gauge", "The group's generation id.")
    for g in groups:
        out.sample("kafka_consumergroup_generation", g.generation_id, group=g.group_id)
    out.family(
        _COORDINATOR + "group_completed_rebalance_total",
        "counter",
        "Generations the groups gained since the endpoint started.",
    )
    out.sample(_COORDINATOR + "group_completed_rebalance_total", rebalances)
    out.family(_COORDINATOR + "offset_commit_total", "counter", "Partition offsets committed.")
    out.sample(_COORDINATOR + "offset_commit_total", offset_commits)
    times = list(load_times_ms.values())
    out.family(
        _COORDINATOR + "partition_load_time_max",
        "gauge",
        "Longest load of a __consumer_offsets partition, in ms.",
    )
    out.sample(_COORDINATOR + "partition_load_time_max", max(times) if times else 0.0)
    out.family(
        _COORDINATOR + "partition_load_time_avg",
        "gauge",
        "Average load of a __consumer_offsets partition, in ms.",
    )
    out.sample(_COORDINATOR + "partition_load_time_avg", sum(times) / len(times) if times else 0.0)
