"""The state `kgroups analytics --follow` keeps stays the size of what the cluster
holds, however many groups, generations and commits pass through it."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from kgroups.spark.analytics.burrow import Commit
from kgroups.spark.analytics.follow_state import FollowState


def _record(offset: int, **fields: Any) -> Any:
    return SimpleNamespace(offsets_partition=offset % 3, offsets_offset=offset, **fields)


def test_state_stays_bounded_over_many_groups_and_commits() -> None:
    state = FollowState(window=10)
    offset = 0
    sizes = []
    for hour in range(200):  # a new short-lived group every "hour", one long-lived group
        records = []
        for j in range(50):
            for group in ("orders-app", f"console-consumer-{hour}"):
                for partition in range(4):
                    records.append(
                        _record(offset, group=group, topic="orders", partition=partition, j=j)
                    )
                    offset += 1
        for r in state.fresh(records):
            state.add((r.group, r.topic, r.partition), Commit(r.j, 0, hour * 3600_000 + r.j))
        state.delete_group(f"console-consumer-{hour - 1}")
        for partition in range(4):  # and a partition's offset expired
            state.delete_offset(("orders-app", "old-topic", partition))
        sizes.append(len(json.dumps(state.to_json())))
    assert len(state.windows) == 8  # orders-app's 4 and this hour's group's 4
    assert all(len(w) == 10 for w in state.windows.values())
    assert len(state.applied) == 3
    assert max(sizes[5:]) <= sizes[5] * 1.1  # the saved state does not grow
    restored = FollowState.from_json(json.loads(json.dumps(state.to_json())), window=10)
    assert restored.windows == state.windows and restored.applied == state.applied


def test_replayed_records_are_not_applied_twice() -> None:
    state = FollowState(window=10)
    batch = [_record(i, group="g", topic="t", partition=0) for i in range(6)]
    assert state.fresh(batch) == batch
    assert state.fresh(batch) == []
    assert (
        state.fresh([*batch, _record(7, group="g", topic="t", partition=0)])[0].offsets_offset == 7
    )
