"""What a share consumer's ShareFetch and ShareAcknowledge requests carry:
whole session at epoch 0, only the changes after, acknowledgements as ranges."""

from __future__ import annotations

import uuid

import pytest

from kgroups.client.config_schema import ConfigError
from kgroups.client.share_acknowledgements import Acknowledgements
from kgroups.client.share_consumer_config import ShareConsumerConfig
from kgroups.client.share_session import ShareSession
from kgroups.errors import ErrorCode

T = uuid.UUID(int=7)


def _fetch(session: ShareSession, wanted: set[tuple[uuid.UUID, int]], acks: dict) -> object:  # type: ignore[type-arg]
    return session.fetch_request(
        "g",
        "m",
        frozenset(wanted),
        acks,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=1024,
        max_records=10,
        record_limit=False,
    )


def _named(request: object) -> list[tuple[int, list[tuple[int, int, tuple[int, ...]]]]]:
    return [
        (
            p.partition_index,
            [
                (b.first_offset, b.last_offset, b.acknowledge_types)
                for b in p.acknowledgement_batches
            ],
        )
        for t in request.topics  # type: ignore[attr-defined]
        for p in t.partitions
    ]


def test_acknowledgements_go_as_ranges_of_one_type() -> None:
    acks = Acknowledgements()
    for offset, ack_type in ((5, 1), (3, 1), (4, 1), (6, 2), (8, 2), (9, 3)):
        acks.add(offset, ack_type)
    assert acks.batches() == [(3, 5, 1), (6, 6, 2), (8, 8, 2), (9, 9, 3)]


def test_a_run_of_accepted_offsets_is_one_range() -> None:
    acks = Acknowledgements()
    acks.add_all(range(500, 1000), 1)
    acks.add_all(range(0, 500), 1)
    assert acks.batches() == [(0, 999, 1)]
    acks.add(1000, 2)  # another type
    assert acks.batches() == [(0, 999, 1), (1000, 1000, 2)]
    assert Acknowledgements().batches() == []


def test_a_session_names_its_partitions_once_then_only_changes() -> None:
    session = ShareSession(1)
    opening = _fetch(session, {(T, 0), (T, 1)}, {})
    assert opening.share_session_epoch == 0  # type: ignore[attr-defined]
    assert _named(opening) == [(0, []), (1, [])]
    session.on_answer(ErrorCode.none, frozenset({(T, 0), (T, 1)}))
    # Partition 1 goes, 2 comes, 0 has acknowledgements.
    nxt = _fetch(session, {(T, 0), (T, 2)}, {(T, 0): [(0, 4, 1)]})
    assert nxt.share_session_epoch == 1  # type: ignore[attr-defined]
    assert _named(nxt) == [(0, [(0, 4, (1,))]), (2, [])]
    forgotten = nxt.forgotten_topics_data  # type: ignore[attr-defined]
    assert [(f.topic_id, f.partitions) for f in forgotten] == [(T, (1,))]
    session.on_answer(ErrorCode.none, frozenset({(T, 0), (T, 2)}))
    assert session.epoch == 2
    closing = session.acknowledge_request("g", "m", {(T, 2): [(7, 7, 3)]}, closing=True)
    assert closing.share_session_epoch == -1


def test_a_session_the_broker_lost_is_opened_again() -> None:
    session = ShareSession(1)
    session.on_answer(ErrorCode.none, frozenset({(T, 0)}))
    session.on_answer(ErrorCode.share_session_not_found, frozenset({(T, 0)}))
    assert session.epoch == 0 and not session.partitions
    assert _named(_fetch(session, {(T, 0)}, {})) == [(0, [])]


def test_a_share_consumer_needs_a_group_and_refuses_offset_settings() -> None:
    with pytest.raises(ConfigError, match=r"group\.id"):
        ShareConsumerConfig.from_dict({"bootstrap.servers": "h:1"})
    with pytest.raises(ConfigError, match=r"share\.auto\.offset\.reset"):
        ShareConsumerConfig.from_dict(
            {"bootstrap.servers": "h:1", "group.id": "g", "auto.offset.reset": "earliest"}
        )
    with pytest.raises(ConfigError, match="not one of"):
        ShareConsumerConfig.from_dict(
            {"bootstrap.servers": "h:1", "group.id": "g", "share.acknowledgement.mode": "auto"}
        )
    config = ShareConsumerConfig.from_dict({"bootstrap.servers": "h:1", "group.id": "g"})
    assert not config.explicit_acknowledgement and config.max_poll_records == 500
