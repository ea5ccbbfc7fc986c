"""Compaction of a partition log kept in the cluster store: a compacted
``__consumer_offsets`` partition loads the same groups and offsets, smaller."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kgroups.cluster.broker_leases import register
from kgroups.cluster.leadership import elect_leaders, partition_leaders
from kgroups.coordinator import CoordinatorConfig, GroupCoordinatorShard
from kgroups.coordinator.records import (
    GroupMetadataValue,
    OffsetCommitValue,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from kgroups.partitions.config import LogConfig
from kgroups.postgres_store.appends import append
from kgroups.postgres_store.compaction import compact
from kgroups.postgres_store.errors import NotLeader
from kgroups.postgres_store.fencing import Writer
from kgroups.postgres_store.reads import read
from kgroups.postgres_store.schema import ensure_schema
from kgroups.postgres_store.store import Store
from kgroups.postgres_store.topics import create_topic
from kgroups.records.batch import decode_records, encode_batch

TOPIC = "__consumer_offsets"
DAY_MS = 86_400_000
NOW_MS = 1_700_000_000_000
# Only the newest batch plays the active segment.
CONFIG = LogConfig(cleanup_policy="compact", segment_bytes=1)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store.connect(store_url)
    ensure_schema(s)
    try:
        yield s
    finally:
        s.close()


def leading(store: Store) -> tuple[Writer, int]:
    create_topic(store, TOPIC, 1, {"cleanup.policy": "compact"})
    lease = register(store, 1, "PLAINTEXT://127.0.0.1:9001", 9000, incarnation=uuid.uuid4())
    elect_leaders(store)
    return Writer(1, lease), partition_leaders(store)[0].leader_epoch


def commit(group: str, partition: int, offset: int) -> tuple[bytes, bytes | None]:
    value = OffsetCommitValue(offset=offset, metadata="", commit_timestamp=NOW_MS)
    return encode_offset_commit_key(group, "t", partition), encode_offset_commit_value(value)


def group(name: str, generation: int) -> tuple[bytes, bytes | None]:
    value = GroupMetadataValue("consumer", generation, "range", None, NOW_MS, ())
    return encode_group_metadata_key(name), encode_group_metadata_value(value)


def write(store: Store, writer: Writer, epoch: int, *records: tuple[bytes, bytes | None]) -> None:
    batch = encode_batch([(k, v, (), NOW_MS) for k, v in records])
    append(store, writer, TOPIC, 0, epoch, [batch])


def loaded(store: Store) -> dict[str, Any]:
    """What a coordinator loads from the partition: groups and their offsets."""
    shard = GroupCoordinatorShard(0, CoordinatorConfig(), partition_exists=lambda t, p: True)
    offset = read(store, TOPIC, 0, 0, 1 << 30).offsets.log_start_offset
    for batch in read(store, TOPIC, 0, offset, 1 << 30).batches:
        for record in decode_records(batch):
            assert record.key is not None
            shard.replay(record.key, record.value)
    return {
        g.group_id: (g.generation_id, {tp: o.offset for tp, o in g.offsets.items()})
        for g in shard._table
    }


def stored(store: Store) -> tuple[int, int]:
    """Bytes and records of the partition's stored batches."""
    batches = read(store, TOPIC, 0, 0, 1 << 30).batches
    return sum(map(len, batches)), sum(len(decode_records(b)) for b in batches)


def test_a_compacted_offsets_partition_loads_the_same_groups_and_is_smaller(
    store: Store,
) -> None:
    writer, epoch = leading(store)
    write(store, writer, epoch, group("live", 1), group("gone", 1), commit("gone", 0, 5))
    for i in range(20):
        write(store, writer, epoch, *(commit(g, p, i) for g in ("live", "other") for p in range(3)))
    # "gone" is deleted: tombstones for its offsets and its metadata.
    write(store, writer, epoch, (encode_offset_commit_key("gone", "t", 0), None))
    write(store, writer, epoch, (encode_group_metadata_key("gone"), None))
    write(store, writer, epoch, group("live", 2), commit("live", 0, 100))
    before = loaded(store)
    size_before, records_before = stored(store)
    assert set(before) == {"live", "other"}

    stats = compact(store, writer, TOPIC, 0, epoch, CONFIG, NOW_MS)
    assert stats is not None
    assert loaded(store) == before
    size_after, records_after = stored(store)
    assert size_after < size_before / 4
    # Kept: 3 offsets of each group, "live"'s metadata, the 2 tombstones, and
    # the newest batch (the active part, never compacted).
    assert records_after == 3 + 3 + 1 + 2 + 2 < records_before

    # Nothing dirty: the next round has nothing to do.
    assert compact(store, writer, TOPIC, 0, epoch, CONFIG, NOW_MS) is None

    # Once compacted before and past delete.retention.ms, the tombstones go too.
    for i in range(15):  # dirty enough: more than half of the closed part
        write(store, writer, epoch, commit("other", 0, 200 + i))
    before = loaded(store)
    assert compact(store, writer, TOPIC, 0, epoch, CONFIG, NOW_MS + 2 * DAY_MS) is not None
    assert loaded(store) == before
    assert stored(store)[1] == 3 + 3 + 1 + 1  # no tombstones; the newest batch


def test_a_replaced_leader_compacts_nothing(store: Store) -> None:
    writer, epoch = leading(store)
    for i in range(5):
        write(store, writer, epoch, commit("g", 0, i))
    before = stored(store)
    with pytest.raises(NotLeader):
        compact(store, writer, TOPIC, 0, epoch - 1, CONFIG, NOW_MS)
    assert stored(store) == before
