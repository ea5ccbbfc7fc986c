"""A broker that joins takes its share of `__consumer_offsets` from a live
broker without a moment of two coordinators: the old coordinator's last
successful answer to a group comes before the new coordinator's first.

Broker 1 reads the store only every few seconds, so a partition taken from
it behind its back would leave it answering its groups for that long."""

from __future__ import annotations

import time
from pathlib import Path

from cluster_brokers import cluster_broker, wait_for
from test_cluster_store_cut import (
    _classic_member,
    _consumer_heartbeat,
    _coordinator,
    _fetch_ok,
    _heartbeat,
    _quiet,
)

from kgroups.errors import ErrorCode
from kgroups.topics.placement import partition_for_group

PARTITIONS = 2
OVERRIDES = (f"offsets.topic.num.partitions={PARTITIONS}", "group.initial.rebalance.delay.ms=0")


def _groups(prefix: str) -> list[str]:
    """A group on each offsets partition."""
    by_partition = {}
    for i in range(100):
        by_partition.setdefault(partition_for_group(f"{prefix}-{i}", PARTITIONS), f"{prefix}-{i}")
    return [by_partition[p] for p in range(PARTITIONS)]


def test_a_joining_broker_takes_groups_over_after_their_old_coordinator_let_go(
    tmp_path: Path, store_url: str
) -> None:
    first = cluster_broker(
        tmp_path,
        store_url,
        1,
        "broker.heartbeat.interval.ms=3000",
        "broker.session.timeout.ms=9000",
        *OVERRIDES,
    )
    second = cluster_broker(tmp_path, store_url, 2, *OVERRIDES)
    try:
        first.start()
        classic, consumer = _groups("classic"), _groups("consumer")
        for group in classic + consumer:
            wait_for(lambda g=group: _coordinator(first.port, g) == 1)
        members = {g: _classic_member(first.port, g) for g in classic}
        epochs = {}
        for group in consumer:
            joined = _consumer_heartbeat(first.port, group, "", 0)
            assert joined.error_code == ErrorCode.none
            epochs[group] = (joined.member_id, int(joined.member_epoch))

        second.start()
        old_ok = dict.fromkeys(classic + consumer, 0.0)  # last success at broker 1
        new_ok: dict[str, float] = {}  # first success at broker 2
        deadline = time.monotonic() + 30
        # Broker 1 is watched for a turn of its own after broker 2 answered.
        while time.monotonic() < deadline:
            if len(new_ok) == 2:
                deadline = min(deadline, max(new_ok.values()) + 4)
            for group, (member, generation) in members.items():
                if _quiet(_heartbeat, first.port, group, member, generation) == ErrorCode.none:
                    old_ok[group] = time.monotonic()
                if group not in new_ok and _quiet(_fetch_ok, second.port, group):
                    new_ok[group] = time.monotonic()
            for group, (member, epoch) in epochs.items():
                answer = _quiet(_consumer_heartbeat, first.port, group, member, epoch)
                if answer is not None and answer.error_code == ErrorCode.none:
                    old_ok[group] = time.monotonic()
                if group not in new_ok:
                    answer = _quiet(_consumer_heartbeat, second.port, group, "", 0)
                    if answer is not None and answer.error_code == ErrorCode.none:
                        new_ok[group] = time.monotonic()
            time.sleep(0.02)
        # One offsets partition moved, with one group of each kind on it.
        assert len(new_ok) == 2, f"broker 2 took only {new_ok}"
        for group, first_new in new_ok.items():
            assert old_ok[group] < first_new, group
        # Its first groups made `__consumer_offsets` while its turns read the
        # store: a read that began before must not make it look deleted.
        assert "was deleted" not in first.log_path.read_text()
    finally:
        second.stop()
        first.stop()
