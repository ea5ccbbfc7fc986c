"""Share partitions restored from stored state, as the metrics endpoint reads
them before their first use: built once, not at every scrape, and built again
when the stored state is another one."""

from __future__ import annotations

import uuid

from kgroups.share_partitions.config import SharePartitionConfig
from kgroups.share_partitions.manager import SharePartitionManager
from kgroups.share_partitions.state_records import StateBatch
from kgroups.share_partitions.states import RecordState

TOPIC = uuid.UUID(int=7)
KEY = ("workers", TOPIC, 0)
OTHER = ("workers", TOPIC, 1)


def _stored(
    start: int, *batches: tuple[int, int, RecordState, int]
) -> tuple[int, tuple[StateBatch, ...]]:
    return start, tuple(
        StateBatch(first, last, int(state), count) for first, last, state, count in batches
    )


def _manager() -> SharePartitionManager:
    manager = SharePartitionManager(SharePartitionConfig(), 10)
    # 10..19 done, 20..29 to be delivered a second time, 30..39 archived.
    manager.stored[KEY] = _stored(
        10,
        (10, 19, RecordState.ACKNOWLEDGED, 1),
        (20, 29, RecordState.AVAILABLE, 1),
        (30, 39, RecordState.ARCHIVED, 2),
    )
    manager.stored[OTHER] = _stored(5)
    return manager


def test_repeated_reads_of_unchanged_stored_state_rebuild_nothing() -> None:
    manager = _manager()
    first = dict(manager.stored_partitions())
    for _ in range(5):
        again = dict(manager.stored_partitions())
        assert all(again[key] is first[key] for key in (KEY, OTHER))
    assert manager.stored_views.rebuilds == 2
    view = first[KEY]
    assert view.start_offset == 20  # past the acknowledged records
    assert view.tally.delivery_complete == 10  # the archived ones; the lag leaves them out


def test_stored_state_stored_again_is_read_anew() -> None:
    manager = _manager()
    manager.stored_partitions()
    manager.stored[KEY] = _stored(40)
    views = dict(manager.stored_partitions())
    assert views[KEY].start_offset == 40 and views[KEY].tally.delivery_complete == 0
    assert manager.stored_views.rebuilds == 3  # only the key whose state changed


def test_a_share_partition_taken_up_is_no_longer_read_from_its_stored_state() -> None:
    manager = _manager()
    manager.stored_partitions()
    served = manager.get_or_create(KEY, lambda: 0)
    assert served.start_offset == 20
    assert [key for key, _sp in manager.stored_partitions()] == [OTHER]
    manager.drop_group("workers")
    assert manager.stored_partitions() == []
    assert manager.stored_views.rebuilds == 2
