"""Share sessions: epochs, the session limit, and the manager releasing an
expired member's records and dropping a deleted group's partitions."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from kgroups.share_partitions import RecordState, SharePartitionConfig
from kgroups.share_partitions.manager import SharePartitionManager
from kgroups.share_partitions.sessions import SessionError, ShareSessionCache

TOPIC = uuid.uuid4()


def test_epochs_move_on_one_request_at_a_time() -> None:
    cache = ShareSessionCache(10)
    session = cache.open("g", "m", [(TOPIC, 0)])
    assert session.epoch == 1
    assert cache.use("g", "m", 1) is session
    session.advance()
    with pytest.raises(SessionError) as stale:
        cache.use("g", "m", 1)
    assert stale.value.code is ErrorCode.invalid_share_session_epoch
    assert cache.use("g", "m", 2) is session
    assert cache.use("g", "m", -1) is session  # closing needs no epoch


def test_the_epoch_wraps_to_one() -> None:
    session = ShareSessionCache(1).open("g", "m", [])
    session.epoch = 2**31 - 1
    session.advance()
    assert session.epoch == 1


def test_unknown_sessions_and_the_limit() -> None:
    cache = ShareSessionCache(1)
    with pytest.raises(SessionError) as missing:
        cache.use("g", "m", 1)
    assert missing.value.code is ErrorCode.share_session_not_found
    cache.open("g", "m", [])
    cache.open("g", "m", [])  # the member's own session is replaced, not counted twice
    with pytest.raises(SessionError) as full:
        cache.open("g", "other", [])
    assert full.value.code is ErrorCode.share_session_limit_reached
    assert cache.close("g", "m") is not None
    cache.open("g", "other", [])


def test_an_expired_member_loses_its_records_and_its_session() -> None:
    manager = SharePartitionManager(SharePartitionConfig(), 10)
    sp = manager.get_or_create(("g", TOPIC, 0), lambda: 0)
    sp.acquire("m", [(0, 4)], 0, 500)
    manager.sessions.open("g", "m", [(TOPIC, 0)])
    manager.member_expired("g", "m")
    record = sp.record(0)
    assert record is not None and record.state is RecordState.AVAILABLE
    assert len(manager.sessions) == 0


def test_a_deleted_group_loses_its_share_partitions() -> None:
    manager = SharePartitionManager(SharePartitionConfig(), 10)
    manager.get_or_create(("g", TOPIC, 0), lambda: 7)
    manager.get_or_create(("h", TOPIC, 0), lambda: 3)
    manager.group_deleted("g")
    assert manager.get(("g", TOPIC, 0)) is None
    again = manager.get_or_create(("g", TOPIC, 0), lambda: 0)
    assert again.start_offset == 0
    kept = manager.get(("h", TOPIC, 0))
    assert kept is not None and kept.start_offset == 3


def test_a_deleted_topic_loses_its_share_partitions() -> None:
    manager = SharePartitionManager(SharePartitionConfig(), 10)
    other = uuid.uuid4()
    manager.get_or_create(("g", TOPIC, 0), lambda: 7)
    manager.get_or_create(("g", other, 0), lambda: 3)
    manager.drop_topics(lambda topic_id: topic_id == other)
    assert manager.get(("g", TOPIC, 0)) is None
    assert manager.get(("g", other, 0)) is not None
    assert manager.forgotten == [("g", TOPIC, 0)]  # its stored state goes too
